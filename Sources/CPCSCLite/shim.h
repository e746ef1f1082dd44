#ifndef PROXIMA_CPCSCLITE_SHIM_H
#define PROXIMA_CPCSCLITE_SHIM_H
#include <PCSC/winscard.h>
#include <PCSC/reader.h>

/// SCARD_PCI_T0/T1 are address-of macros and SCARD_CTL_CODE is function-like: Swift imports neither.
static inline const SCARD_IO_REQUEST *cpcsc_pci_t0(void) { return SCARD_PCI_T0; }
static inline const SCARD_IO_REQUEST *cpcsc_pci_t1(void) { return SCARD_PCI_T1; }
static inline const SCARD_IO_REQUEST *cpcsc_pci_raw(void) { return SCARD_PCI_RAW; }
static inline DWORD cpcsc_ctl_code(DWORD code) { return SCARD_CTL_CODE(code); }
/// MAX_BUFFER_SIZE_EXTENDED is an expression macro (4 + 3 + (1<<16) + 3 + 2): the largest extended APDU or answer.
static inline DWORD cpcsc_max_buffer_size_extended(void) { return MAX_BUFFER_SIZE_EXTENDED; }
#endif
