// RAII owners of the primary context, device memory, streams and events.
#include "runtime/context.h"

#include <utility>

namespace comfuse::runtime {

Context::Context(int ordinal, const Driver& driver) : driver_(&driver), ordinal_(ordinal) {
  const DriverApi& api = driver.api();
  device_ = driver.device(ordinal);
  driver.check(api.primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
  CUresult result = api.ctx_set_current(context_);
  if (result != CUDA_SUCCESS) {
    api.primary_ctx_release(device_);
    driver.check(result, "cuCtxSetCurrent");
  }
}

Context::~Context() {
  if (context_ != nullptr) driver_->api().primary_ctx_release(device_);
}

Context::Context(Context&& other) noexcept
    : driver_(other.driver_),
      ordinal_(other.ordinal_),
      device_(other.device_),
      context_(std::exchange(other.context_, nullptr)) {}

void Context::make_current() const {
  driver_->check(driver_->api().ctx_set_current(context_), "cuCtxSetCurrent");
}

void Context::synchronize() const {
  driver_->check(driver_->api().ctx_synchronize(), "cuCtxSynchronize");
}

int Context::attribute(CUdevice_attribute attribute) const {
  int value = 0;
  driver_->check(driver_->api().device_get_attribute(&value, attribute, device_), "cuDeviceGetAttribute");
  return value;
}

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t bytes)
    : driver_(&context.driver()), bytes_(bytes) {
  COMFUSE_CHECK(bytes > 0, "device buffers hold at least one byte");
  driver_->check(driver_->api().mem_alloc(&pointer_, bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != 0) driver_->api().mem_free(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : driver_(other.driver_),
      pointer_(std::exchange(other.pointer_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_ != 0) driver_->api().mem_free(pointer_);
    driver_ = other.driver_;
    pointer_ = std::exchange(other.pointer_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::copy_from_host(const void* data, std::size_t bytes) {
  COMFUSE_CHECK(bytes <= bytes_, "copy of " + std::to_string(bytes) + " bytes into a buffer of " +
                                     std::to_string(bytes_) + " bytes");
  if (bytes == 0) return;
  driver_->check(driver_->api().memcpy_htod(pointer_, data, bytes), "cuMemcpyHtoD");
  // From pageable memory the call may return before the DMA has landed, and the legacy stream it is ordered
  // on does not order the non-blocking streams kernels run on: wait for it here.
  driver_->check(driver_->api().ctx_synchronize(), "cuCtxSynchronize");
}

void DeviceBuffer::copy_to_host(void* data, std::size_t bytes) const {
  COMFUSE_CHECK(bytes <= bytes_, "copy of " + std::to_string(bytes) + " bytes out of a buffer of " +
                                     std::to_string(bytes_) + " bytes");
  if (bytes == 0) return;
  driver_->check(driver_->api().memcpy_dtoh(data, pointer_, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_bytes(std::uint8_t value) {
  driver_->check(driver_->api().memset_d8(pointer_, value, bytes_), "cuMemsetD8");
  // A memset of device memory is asynchronous, on the legacy stream: wait, so that no launch on a
  // non-blocking stream starts before the bytes are set (or has its outputs overwritten after it).
  driver_->check(driver_->api().ctx_synchronize(), "cuCtxSynchronize");
}

Stream::Stream(const Context& context) : driver_(&context.driver()) {
  driver_->check(driver_->api().stream_create(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

Stream::~Stream() {
  if (stream_ != nullptr) driver_->api().stream_destroy(stream_);
}

Stream::Stream(Stream&& other) noexcept
    : driver_(other.driver_), stream_(std::exchange(other.stream_, nullptr)) {}

void Stream::synchronize() const {
  driver_->check(driver_->api().stream_synchronize(stream_), "cuStreamSynchronize");
}

Event::Event(const Context& context) : driver_(&context.driver()) {
  driver_->check(driver_->api().event_create(&event_, CU_EVENT_DEFAULT), "cuEventCreate");
}

Event::~Event() {
  if (event_ != nullptr) driver_->api().event_destroy(event_);
}

Event::Event(Event&& other) noexcept : driver_(other.driver_), event_(std::exchange(other.event_, nullptr)) {}

void Event::record(const Stream& stream) {
  driver_->check(driver_->api().event_record(event_, stream.get()), "cuEventRecord");
}

void Event::synchronize() const {
  driver_->check(driver_->api().event_synchronize(event_), "cuEventSynchronize");
}

double Event::elapsed_ms(const Event& start, const Event& end) {
  float ms = 0.0f;
  start.driver_->check(start.driver_->api().event_elapsed_time(&ms, start.event_, end.event_),
                       "cuEventElapsedTime");
  return ms;
}

}  // namespace comfuse::runtime
