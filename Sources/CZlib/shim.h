#ifndef PROXIMA_CZLIB_SHIM_H
#define PROXIMA_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit and deflateInit are macros (they pass the version and struct size), which Swift does not import.
static inline int CZlib_inflateInit(z_streamp stream) { return inflateInit(stream); }
static inline int CZlib_deflateInit(z_streamp stream, int level) { return deflateInit(stream, level); }
#endif
