#ifndef PROXIMA_CCID_READER_MOCK_H
#define PROXIMA_CCID_READER_MOCK_H
#include <stddef.h>
#include <stdint.h>

/// USB CCID contactless readers emulated under umockdev (libumockdev's custom ioctl handler answering usbdevfs), so
/// libusb itself runs against them. Only works in a process started under `umockdev-wrapper`.

/// The card behind a reader: answers one command APDU; returns the response length (data and status word), at most
/// `capacity` bytes.
typedef size_t (*ccid_mock_card_fn)(void *context, const uint8_t *apdu, size_t length, uint8_t *response,
                                    size_t capacity);

typedef struct ccid_mock ccid_mock;

/// A testbed; create it before libusb_init.
ccid_mock *ccid_mock_new(void);
void ccid_mock_free(ccid_mock *mock);

/// Adds reader number `index` (1…120) as /dev/bus/usb/001/<index>, VID 1209 PID CC1D, serial "PXM<index>", with a
/// card in its field when `card_present`. Returns 0, or -1.
int ccid_mock_add_reader(ccid_mock *mock, int index, ccid_mock_card_fn card, void *context, int card_present);

/// Puts a card into / takes it out of reader `index`'s field; a NotifySlotChange goes out on its interrupt endpoint.
void ccid_mock_set_card_present(ccid_mock *mock, int index, int present);
/// The next XfrBlock on reader `index` is answered by `count` time extensions first.
void ccid_mock_time_extensions(ccid_mock *mock, int index, int count);
/// The next answer on reader `index` is preceded by `count` copies carrying a stale bSeq.
void ccid_mock_wrong_sequence(ccid_mock *mock, int index, int count);
/// The next XfrBlock on reader `index` fails with bError `error` (bStatus 0x40).
void ccid_mock_slot_error(ccid_mock *mock, int index, uint8_t error);
/// CLAIMINTERFACE on reader `index` fails with EBUSY (another driver holds it) while `busy`.
void ccid_mock_set_busy(ccid_mock *mock, int index, int busy);
/// Unplugs reader `index`: a "remove" uevent, and every transfer or claim fails with ENODEV (libusb's
/// LIBUSB_ERROR_NO_DEVICE) until it is replugged.
void ccid_mock_unplug(ccid_mock *mock, int index);
/// Plugs reader `index` back in (an "add" uevent; transfers work again).
void ccid_mock_replug(ccid_mock *mock, int index);
/// XfrBlocks reader `index` answered.
int ccid_mock_apdu_count(ccid_mock *mock, int index);

#endif
