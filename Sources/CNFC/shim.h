#ifndef PROXIMA_CNFC_SHIM_H
#define PROXIMA_CNFC_SHIM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <nfc/nfc.h>
#endif
