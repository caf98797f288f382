/* Export control for the trace library. It is built with hidden visibility
 * so that only the public reader API (gpuphase_*) leaves the shared
 * library; the preload library compiles the same sources into itself and
 * defines GP_TRACE_NO_EXPORT so that it exports none of them. */
#ifndef GP_TRACE_API_H
#define GP_TRACE_API_H

#if defined(GP_TRACE_NO_EXPORT) || !defined(__GNUC__)
#define GPUPHASE_API
#else
#define GPUPHASE_API __attribute__((visibility("default")))
#endif

#endif
