# Writes the version header with the commit checked out at build time (run by the comfuse_version target on
# every build; the header is rewritten only when its text changes, so an unchanged commit recompiles nothing).
# Inputs: -DSOURCE_DIR (the repository), -DTEMPLATE (version.h.in), -DOUTPUT (the header), -DRELEASE (x.y.z).
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE COMFUSE_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(COMFUSE_VERSION_STRING "${RELEASE}")
if(COMFUSE_GIT_SHA)
  set(COMFUSE_VERSION_STRING "${RELEASE}+${COMFUSE_GIT_SHA}")
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
