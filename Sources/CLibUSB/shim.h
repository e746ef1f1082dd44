#ifndef PROXIMA_CLIBUSB_SHIM_H
#define PROXIMA_CLIBUSB_SHIM_H
#include <libusb.h>
#endif
