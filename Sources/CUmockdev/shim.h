#ifndef PROXIMA_CUMOCKDEV_SHIM_H
#define PROXIMA_CUMOCKDEV_SHIM_H
#include <umockdev.h>
#endif
