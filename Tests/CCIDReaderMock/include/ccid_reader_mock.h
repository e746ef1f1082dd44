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

/// What a reader looks like: its slots (bMaxSlotIndex + 1, 1…4), dwFeatures (0: 0x000400FE, the extended APDU
/// level; 0x000100xx is the TPDU level, where the card function gets and returns T=1 blocks), and the ATR its cards
/// answer IccPowerOn with (NULL: the pseudo-ATR 3B 80 80 01 01).
typedef struct {
    int slots;
    uint32_t features;
    const uint8_t *atr;
    size_t atr_length;
} ccid_mock_reader_options;

/// What a slot was asked.
typedef struct {
    int apdus;           // XfrBlocks passed to the card
    int slot_status;     // GetSlotStatus commands
    int control_aborts;  // ABORT requests on the control pipe
    int bulk_aborts;     // PC_to_RDR_Abort commands
    int matched_aborts;  // PC_to_RDR_Abort commands whose bSeq the preceding ABORT request named
    int set_parameters;  // PC_to_RDR_SetParameters commands
    int holding;         // 1 while an XfrBlock is held (ccid_mock_hold_next_answer)
} ccid_mock_slot_stats;

/// A testbed; create it before libusb_init.
ccid_mock *ccid_mock_new(void);
void ccid_mock_free(ccid_mock *mock);

/// Adds reader number `index` (1…120) as /dev/bus/usb/001/<index>, VID 1209 PID CC1D, serial "PXM<index>", with a
/// card in its field when `card_present`. Returns 0, or -1.
int ccid_mock_add_reader(ccid_mock *mock, int index, ccid_mock_card_fn card, void *context, int card_present);

/// Adds reader number `index` as `ccid_mock_add_reader` does, shaped by `options`, with no card in any slot.
int ccid_mock_add_reader_with(ccid_mock *mock, int index, const ccid_mock_reader_options *options);
/// Sets the card behind slot `slot` of reader `index` (no NotifySlotChange).
void ccid_mock_set_slot_card(ccid_mock *mock, int index, int slot, ccid_mock_card_fn card, void *context,
                             int present);
/// Puts a card into / takes it out of slot `slot`; a NotifySlotChange with that slot's "changed" bit goes out.
void ccid_mock_set_slot_present(ccid_mock *mock, int index, int slot, int present);
/// The next XfrBlock on slot `slot` gets no answer until an ABORT request names the slot (then CMD_ABORTED).
void ccid_mock_hold_next_answer(ccid_mock *mock, int index, int slot);
ccid_mock_slot_stats ccid_mock_stats(ccid_mock *mock, int index, int slot);
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
/// Announces reader `index`, added after libusb_init, with an "add" uevent (what a hotplug monitor hears).
void ccid_mock_announce(ccid_mock *mock, int index);
/// Plugs reader `index` back in (an "add" uevent; transfers work again).
void ccid_mock_replug(ccid_mock *mock, int index);
/// XfrBlocks reader `index` answered.
int ccid_mock_apdu_count(ccid_mock *mock, int index);

#endif
