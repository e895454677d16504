// RAII owners of driver objects: the primary context of a device, device memory, streams and events.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/driver.h"

namespace comfuse::runtime {

/// A retained primary context of one device, made current on the constructing thread. Every other object in
/// this header belongs to a Context and must be destroyed before it. Not copyable; movable.
class Context {
 public:
  /// Retains device `ordinal`'s primary context and makes it current. Throws NoCudaDeviceError when the
  /// driver cannot be loaded or `ordinal` is not below the device count.
  explicit Context(int ordinal = 0, const Driver& driver = Driver::get());
  ~Context();
  Context(Context&& other) noexcept;
  Context& operator=(Context&&) = delete;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// Makes this context current on the calling thread (needed on threads other than the constructing one).
  void make_current() const;
  /// Waits for all work in the context; surfaces asynchronous kernel faults as RuntimeError.
  void synchronize() const;
  /// cuDeviceGetAttribute for this device.
  int attribute(CUdevice_attribute attribute) const;

  const Driver& driver() const { return *driver_; }
  int ordinal() const { return ordinal_; }
  CUdevice device() const { return device_; }
  CUcontext get() const { return context_; }

 private:
  const Driver* driver_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

/// Device memory of a fixed size from cuMemAlloc. Copies and fills are synchronous: each has landed when it
/// returns, whatever stream a later launch uses. Not copyable; movable.
class DeviceBuffer {
 public:
  /// Allocates `bytes` (at least 1) on `context`'s device; contents undefined.
  DeviceBuffer(const Context& context, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Copies `bytes` from host memory to the start of the buffer; throws InternalError if it does not fit.
  void copy_from_host(const void* data, std::size_t bytes);
  /// Copies `bytes` from the start of the buffer to host memory; throws InternalError if beyond the end.
  void copy_to_host(void* data, std::size_t bytes) const;
  /// Sets every byte to `value`, and waits until it is done.
  void fill_bytes(std::uint8_t value);

  template <typename T>
  void upload(std::span<const T> values) {
    copy_from_host(values.data(), values.size_bytes());
  }
  template <typename T>
  std::vector<T> download(std::size_t count) const {
    std::vector<T> values(count);
    copy_to_host(values.data(), count * sizeof(T));
    return values;
  }

  CUdeviceptr get() const { return pointer_; }
  std::size_t size() const { return bytes_; }

 private:
  const Driver* driver_;
  CUdeviceptr pointer_ = 0;
  std::size_t bytes_ = 0;
};

/// A non-blocking stream (it does not synchronise with the legacy default stream). Not copyable; movable.
class Stream {
 public:
  explicit Stream(const Context& context);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// Waits for the work queued on this stream; surfaces asynchronous kernel faults as RuntimeError.
  void synchronize() const;
  CUstream get() const { return stream_; }

 private:
  const Driver* driver_;
  CUstream stream_ = nullptr;
};

/// A timing event. Not copyable; movable.
class Event {
 public:
  explicit Event(const Context& context);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void synchronize() const;
  /// Milliseconds between two recorded, completed events (resolution about 0.5 µs).
  static double elapsed_ms(const Event& start, const Event& end);
  CUevent get() const { return event_; }

 private:
  const Driver* driver_;
  CUevent event_ = nullptr;
};

}  // namespace comfuse::runtime
