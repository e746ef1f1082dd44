// usbdevfs answered as a CCID contactless reader: the pattern of libusb's tests/umockdev.c (SUBMITURB queues,
// REAPURB[NDELAY] completes, EAGAIN when nothing is ready), with the reader's side of CCID Rev 1.1 §6 behind it.
#include "ccid_reader_mock.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>
#include <stdio.h>
#include <string.h>
#include <umockdev.h>

#define MAX_READERS 121
#define MAX_SLOTS 4
#define HEADER 10

struct slot {
    ccid_mock_card_fn card;
    void *context;
    int present;
    int changed;         // a NotifySlotChange with this slot's "changed" bit is due
    int hold_next;       // the next XfrBlock is only answered when aborted
    int held;            // an XfrBlock is held; its bSeq:
    uint8_t held_sequence;
    int control_abort;   // an ABORT request arrived; its bSeq:
    uint8_t control_abort_sequence;
    ccid_mock_slot_stats stats;
};

struct reader {
    int used;
    char devnode[64];
    char syspath[64];
    int slot_count;
    uint32_t features;
    uint8_t atr[33];
    size_t atr_length;
    struct slot slots[MAX_SLOTS];
    int time_extensions;
    int wrong_sequence;
    int slot_error;
    int busy;
    int unplugged;
    UMockdevIoctlBase *handler;
    GQueue in_urbs;      // bulk IN urbs waiting for an answer
    GQueue interrupt_urbs;
    GQueue answers;      // GBytes*, answers waiting for a bulk IN urb
    GQueue completed;    // urbs ready to reap
};

struct ccid_mock {
    UMockdevTestbed *testbed;
    GMutex lock;
    struct reader readers[MAX_READERS];
};

static struct ccid_mock *current;

static void answer(struct reader *r, uint8_t type, uint8_t slot, uint8_t seq, uint8_t status, uint8_t error,
                   uint8_t parameter, const uint8_t *data, size_t length) {
    uint8_t *message = g_malloc(HEADER + length);
    message[0] = type;
    message[1] = length & 0xFF;
    message[2] = (length >> 8) & 0xFF;
    message[3] = (length >> 16) & 0xFF;
    message[4] = (length >> 24) & 0xFF;
    message[5] = slot;
    message[6] = seq;
    message[7] = status;
    message[8] = error;
    message[9] = parameter;
    if (length) memcpy(message + HEADER, data, length);
    // Stale answers first (a reader replaying an older bSeq), then the real one.
    for (; r->wrong_sequence > 0; r->wrong_sequence--) {
        uint8_t *stale = g_memdup2(message, HEADER + length);
        stale[6] = (uint8_t)(seq + 0x55);
        g_queue_push_tail(&r->answers, g_bytes_new_take(stale, HEADER + length));
    }
    g_queue_push_tail(&r->answers, g_bytes_new_take(message, HEADER + length));
}

static uint8_t icc_status(struct slot *s) { return s->present ? 0x00 : 0x02; }

static int tpdu_level(struct reader *r) { return (r->features & 0x00070000) == 0x00010000; }

static void process(struct reader *r, const uint8_t *message, size_t length) {
    if (length < HEADER) return;
    uint8_t slot = message[5], seq = message[6];
    size_t data_length = message[1] | message[2] << 8 | message[3] << 16 | (size_t)message[4] << 24;
    if (data_length > length - HEADER) data_length = length - HEADER;
    const uint8_t *data = message + HEADER;
    if (slot >= r->slot_count) {
        // bError 5: the bSlot field (offset 5) is wrong.
        answer(r, message[0] == 0x6F || message[0] == 0x62 ? 0x80 : 0x81, slot, seq, 0x42, 0x05, 0, NULL, 0);
        return;
    }
    struct slot *s = &r->slots[slot];
    switch (message[0]) {
    case 0x62:  // IccPowerOn
        if (s->present)
            answer(r, 0x80, slot, seq, 0x00, 0, 0, r->atr, r->atr_length);
        else
            answer(r, 0x80, slot, seq, 0x42, 0xFE, 0, NULL, 0);
        break;
    case 0x63:  // IccPowerOff
        answer(r, 0x81, slot, seq, s->present ? 0x01 : 0x02, 0, 0, NULL, 0);
        break;
    case 0x65:  // GetSlotStatus
        s->stats.slot_status++;
        answer(r, 0x81, slot, seq, icc_status(s), 0, 0, NULL, 0);
        break;
    case 0x72:  // Abort: answered once the ABORT request with the same bSeq came (CCID §5.3.1)
        s->stats.bulk_aborts++;
        if (s->control_abort && s->control_abort_sequence == seq) s->stats.matched_aborts++;
        s->control_abort = 0;
        answer(r, 0x81, slot, seq, icc_status(s), 0, 0, NULL, 0);
        break;
    case 0x61:  // SetParameters: echoed as RDR_to_PC_Parameters
        s->stats.set_parameters++;
        answer(r, 0x82, slot, seq, icc_status(s), 0, message[7], data, data_length);
        break;
    case 0x6F: {  // XfrBlock
        if (!s->present) {
            answer(r, 0x80, slot, seq, 0x42, 0xFE, 0, NULL, 0);
            break;
        }
        if (s->hold_next) {
            s->hold_next = 0;
            s->held = 1;
            s->held_sequence = seq;
            s->stats.holding = 1;
            break;
        }
        if (r->slot_error >= 0) {
            answer(r, 0x80, slot, seq, 0x40, (uint8_t)r->slot_error, 0, NULL, 0);
            r->slot_error = -1;
            break;
        }
        for (; r->time_extensions > 0; r->time_extensions--) answer(r, 0x80, slot, seq, 0x80, 0x01, 0, NULL, 0);
        static uint8_t response[65538];
        size_t count = s->card ? s->card(s->context, data, data_length, response, sizeof response) : 0;
        s->stats.apdus++;
        if (tpdu_level(r) && count == 0) {
            // At the TPDU level a card that sends no block is mute: ICC_MUTE.
            answer(r, 0x80, slot, seq, 0x40, 0xFE, 0, NULL, 0);
            break;
        }
        if (count < 2) {
            response[0] = 0x6F;
            response[1] = 0x00;
            count = 2;
        }
        answer(r, 0x80, slot, seq, 0x00, 0, 0, response, count);
        break;
    }
    default:
        answer(r, 0x81, slot, seq, 0x40 | icc_status(s), 0x00, 0, NULL, 0);
    }
}

/// A control transfer: the class-specific ABORT request (bmRequestType 21, bRequest 01, wValue bSeq << 8 | bSlot)
/// answers a held XfrBlock with CMD_ABORTED; anything else is accepted with no data.
static void control(struct reader *r, const uint8_t *setup) {
    if (setup[0] != 0x21 || setup[1] != 0x01) return;
    uint8_t slot = setup[2], seq = setup[3];
    if (slot >= r->slot_count) return;
    struct slot *s = &r->slots[slot];
    s->stats.control_aborts++;
    s->control_abort = 1;
    s->control_abort_sequence = seq;
    if (s->held) {
        s->held = 0;
        s->stats.holding = 0;
        answer(r, 0x80, slot, s->held_sequence, 0x40 | icc_status(s), 0xFF, 0, NULL, 0);
    }
}

/// Moves answers into waiting bulk IN urbs, and a pending slot change into a waiting interrupt urb.
static void match(struct reader *r) {
    while (!g_queue_is_empty(&r->in_urbs) && !g_queue_is_empty(&r->answers)) {
        UMockdevIoctlData *urb_data = g_queue_pop_head(&r->in_urbs);
        GBytes *bytes = g_queue_pop_head(&r->answers);
        struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
        gsize size = 0;
        const uint8_t *message = g_bytes_get_data(bytes, &size);
        if ((int)size > urb->buffer_length) size = urb->buffer_length;
        memcpy(urb->buffer, message, size);
        urb->actual_length = (int)size;
        urb->status = 0;
        g_bytes_unref(bytes);
        g_queue_push_tail(&r->completed, urb_data);
    }
    int pending = 0;
    for (int i = 0; i < r->slot_count; i++) pending |= r->slots[i].changed;
    if (pending && !g_queue_is_empty(&r->interrupt_urbs)) {
        // RDR_to_PC_NotifySlotChange: two bits per slot, "present" then "changed", slot 0 lowest (CCID §6.3.1).
        UMockdevIoctlData *urb_data = g_queue_pop_head(&r->interrupt_urbs);
        struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
        uint8_t notify[2] = {0x50, 0};
        for (int i = 0; i < r->slot_count; i++) {
            notify[1] |= (uint8_t)(((r->slots[i].present ? 1 : 0) | (r->slots[i].changed ? 2 : 0)) << (2 * i));
            r->slots[i].changed = 0;
        }
        memcpy(urb->buffer, notify, 2);
        urb->actual_length = 2;
        urb->status = 0;
        g_queue_push_tail(&r->completed, urb_data);
    }
}

static gboolean handle_ioctl(UMockdevIoctlBase *handler, UMockdevIoctlClient *client, gpointer user_data) {
    (void)handler;
    struct reader *r = user_data;
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client);
    gulong request = umockdev_ioctl_client_get_request(client);
    g_mutex_lock(&current->lock);
    gboolean handled = TRUE;
    if (r->unplugged && (request == USBDEVFS_SUBMITURB || request == USBDEVFS_CLAIMINTERFACE)) {
        umockdev_ioctl_client_complete(client, -1, ENODEV);
        g_mutex_unlock(&current->lock);
        return TRUE;
    }
    switch (request) {
    case USBDEVFS_GET_CAPABILITIES: {
        g_autoptr(UMockdevIoctlData) d = umockdev_ioctl_data_resolve(arg, 0, sizeof(guint32), NULL);
        *(guint32 *)d->data = USBDEVFS_CAP_BULK_CONTINUATION | USBDEVFS_CAP_NO_PACKET_SIZE_LIM |
                              USBDEVFS_CAP_REAP_AFTER_DISCONNECT | USBDEVFS_CAP_ZERO_PACKET;
        umockdev_ioctl_client_complete(client, 0, 0);
        break;
    }
    case USBDEVFS_CLAIMINTERFACE:
        if (r->busy)
            umockdev_ioctl_client_complete(client, -1, EBUSY);
        else
            umockdev_ioctl_client_complete(client, 0, 0);
        break;
    case USBDEVFS_RELEASEINTERFACE:
    case USBDEVFS_CLEAR_HALT:
    case USBDEVFS_RESET:
    case USBDEVFS_RESETEP:
    case USBDEVFS_SETINTERFACE:
    case USBDEVFS_SETCONFIGURATION:
        umockdev_ioctl_client_complete(client, 0, 0);
        break;
    case USBDEVFS_GETDRIVER:
        umockdev_ioctl_client_complete(client, -1, ENODATA);
        break;
    case USBDEVFS_SUBMITURB: {
        UMockdevIoctlData *urb_data = umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_urb), NULL);
        struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
        g_autoptr(UMockdevIoctlData) buffer = umockdev_ioctl_data_resolve(
            urb_data, G_STRUCT_OFFSET(struct usbdevfs_urb, buffer), urb->buffer_length, NULL);
        if (urb->endpoint == 0x00 && urb->buffer_length >= 8) {
            control(r, buffer->data);
            urb->actual_length = 0;
            urb->status = 0;
            g_queue_push_tail(&r->completed, urb_data);
        } else if (urb->endpoint == 0x01) {
            process(r, buffer->data, urb->buffer_length);
            urb->actual_length = urb->buffer_length;
            urb->status = 0;
            g_queue_push_tail(&r->completed, urb_data);
        } else if (urb->endpoint == 0x82) {
            g_queue_push_tail(&r->in_urbs, urb_data);
        } else if (urb->endpoint == 0x83) {
            g_queue_push_tail(&r->interrupt_urbs, urb_data);
        } else {
            umockdev_ioctl_data_unref(urb_data);
            umockdev_ioctl_client_complete(client, -1, EINVAL);
            break;
        }
        match(r);
        umockdev_ioctl_client_complete(client, 0, 0);
        break;
    }
    case USBDEVFS_REAPURB:
    case USBDEVFS_REAPURBNDELAY: {
        match(r);
        UMockdevIoctlData *urb_data = g_queue_pop_head(&r->completed);
        if (!urb_data) {
            umockdev_ioctl_client_complete(client, -1, EAGAIN);
            break;
        }
        g_autoptr(UMockdevIoctlData) pointer = umockdev_ioctl_data_resolve(arg, 0, sizeof(gpointer), NULL);
        umockdev_ioctl_data_set_ptr(pointer, 0, urb_data);
        umockdev_ioctl_data_unref(urb_data);
        umockdev_ioctl_client_complete(client, 0, 0);
        break;
    }
    case USBDEVFS_DISCARDURB: {
        // Move the urb (found by its client address) to the completed list, cancelled.
        gulong address = *(gulong *)arg->data;
        GQueue *queues[] = {&r->in_urbs, &r->interrupt_urbs};
        gboolean found = FALSE;
        for (int q = 0; q < 2 && !found; q++) {
            for (GList *l = queues[q]->head; l; l = l->next) {
                UMockdevIoctlData *urb_data = l->data;
                if (urb_data->client_addr == address) {
                    g_queue_delete_link(queues[q], l);
                    ((struct usbdevfs_urb *)urb_data->data)->status = -ENOENT;
                    ((struct usbdevfs_urb *)urb_data->data)->actual_length = 0;
                    g_queue_push_tail(&r->completed, urb_data);
                    found = TRUE;
                    break;
                }
            }
        }
        umockdev_ioctl_client_complete(client, found ? 0 : -1, found ? 0 : EINVAL);
        break;
    }
    default:
        handled = FALSE;
    }
    g_mutex_unlock(&current->lock);
    return handled;
}

ccid_mock *ccid_mock_new(void) {
    ccid_mock *mock = g_new0(ccid_mock, 1);
    mock->testbed = umockdev_testbed_new();
    g_mutex_init(&mock->lock);
    current = mock;
    return mock;
}

void ccid_mock_free(ccid_mock *mock) {
    if (!mock) return;
    for (int i = 0; i < MAX_READERS; i++) {
        if (mock->readers[i].handler) g_object_unref(mock->readers[i].handler);
    }
    g_object_unref(mock->testbed);
    if (current == mock) current = NULL;
    g_free(mock);
}

int ccid_mock_add_reader_with(ccid_mock *mock, int index, const ccid_mock_reader_options *options) {
    if (index < 1 || index >= MAX_READERS || mock->readers[index].used) return -1;
    if (options->slots < 1 || options->slots > MAX_SLOTS || options->atr_length > 33) return -1;
    struct reader *r = &mock->readers[index];
    r->used = 1;
    r->slot_count = options->slots;
    r->features = options->features ? options->features : 0x000400FE;
    static const uint8_t pseudo_atr[] = {0x3B, 0x80, 0x80, 0x01, 0x01};
    if (options->atr && options->atr_length) {
        memcpy(r->atr, options->atr, options->atr_length);
        r->atr_length = options->atr_length;
    } else {
        memcpy(r->atr, pseudo_atr, sizeof pseudo_atr);
        r->atr_length = sizeof pseudo_atr;
    }
    r->slot_error = -1;
    g_queue_init(&r->in_urbs);
    g_queue_init(&r->interrupt_urbs);
    g_queue_init(&r->answers);
    g_queue_init(&r->completed);
    snprintf(r->devnode, sizeof r->devnode, "/dev/bus/usb/001/%03d", index);
    snprintf(r->syspath, sizeof r->syspath, "/sys/devices/usb%d", index);
    r->handler = umockdev_ioctl_base_new();
    g_signal_connect(r->handler, "handle-ioctl", G_CALLBACK(handle_ioctl), r);
    if (!umockdev_testbed_attach_ioctl(mock->testbed, r->devnode, r->handler, NULL)) return -1;
    // Device, configuration, interface (class 0B), the 54-byte CCID class descriptor, bulk OUT 01, bulk IN 82,
    // interrupt IN 83.
    static const char *template =
        "12010002000000400912"
        "1dcc0001010203010902"
        "5d000101008032090400"
        "00030b00000036211001"
        "000703000000a00f0000"
        "a00f0000008025000000"
        "b0040000fe0000000000"
        "000000000000fe000400"
        "0f010000ffff00000001"
        "07050102400000070582"
        "02400000070583030800"
        "10";
    char descriptors[sizeof "12010002000000400912" * 12];
    snprintf(descriptors, sizeof descriptors, "%s", template);
    // bMaxSlotIndex at byte 36 + 4, dwFeatures (little-endian) at byte 36 + 40.
    snprintf(descriptors + 2 * 40, 3, "%02x", options->slots - 1);
    descriptors[2 * 40 + 2] = template[2 * 40 + 2];
    char features[9];
    snprintf(features, sizeof features, "%02x%02x%02x%02x", r->features & 0xFF, (r->features >> 8) & 0xFF,
             (r->features >> 16) & 0xFF, (r->features >> 24) & 0xFF);
    memcpy(descriptors + 2 * 76, features, 8);
    char description[2048];
    snprintf(description, sizeof description,
             "P: /devices/usb%d\n"
             "N: bus/usb/001/%03d\n"
             "E: SUBSYSTEM=usb\n"
             "E: DEVTYPE=usb_device\n"
             "E: BUSNUM=001\n"
             "E: DEVNUM=%03d\n"
             "E: DEVNAME=/dev/bus/usb/001/%03d\n"
             "A: busnum=1\\n\n"
             "A: devnum=%d\\n\n"
             "A: bConfigurationValue=1\\n\n"
             "A: speed=12\\n\n"
             "A: serial=PXM%d\\n\n"
             "H: descriptors=%s\n",
             index, index, index, index, index, index, descriptors);
    return umockdev_testbed_add_from_string(mock->testbed, description, NULL) ? 0 : -1;
}

int ccid_mock_add_reader(ccid_mock *mock, int index, ccid_mock_card_fn card, void *context, int card_present) {
    ccid_mock_reader_options options = {.slots = 1};
    if (ccid_mock_add_reader_with(mock, index, &options) != 0) return -1;
    ccid_mock_set_slot_card(mock, index, 0, card, context, card_present);
    return 0;
}

static struct reader *reader_at(ccid_mock *mock, int index) {
    if (index < 1 || index >= MAX_READERS || !mock->readers[index].used) return NULL;
    return &mock->readers[index];
}

void ccid_mock_set_slot_card(ccid_mock *mock, int index, int slot, ccid_mock_card_fn card, void *context,
                             int present) {
    g_mutex_lock(&mock->lock);
    struct reader *r = reader_at(mock, index);
    if (r && slot >= 0 && slot < r->slot_count) {
        r->slots[slot].card = card;
        r->slots[slot].context = context;
        r->slots[slot].present = present;
    }
    g_mutex_unlock(&mock->lock);
}

void ccid_mock_set_slot_present(ccid_mock *mock, int index, int slot, int present) {
    g_mutex_lock(&mock->lock);
    struct reader *r = reader_at(mock, index);
    if (r && slot >= 0 && slot < r->slot_count) {
        r->slots[slot].present = present;
        r->slots[slot].changed = 1;
        match(r);
    }
    g_mutex_unlock(&mock->lock);
}

void ccid_mock_hold_next_answer(ccid_mock *mock, int index, int slot) {
    g_mutex_lock(&mock->lock);
    struct reader *r = reader_at(mock, index);
    if (r && slot >= 0 && slot < r->slot_count) r->slots[slot].hold_next = 1;
    g_mutex_unlock(&mock->lock);
}

ccid_mock_slot_stats ccid_mock_stats(ccid_mock *mock, int index, int slot) {
    ccid_mock_slot_stats stats = {0};
    g_mutex_lock(&mock->lock);
    struct reader *r = reader_at(mock, index);
    if (r && slot >= 0 && slot < r->slot_count) stats = r->slots[slot].stats;
    g_mutex_unlock(&mock->lock);
    return stats;
}

void ccid_mock_set_card_present(ccid_mock *mock, int index, int present) {
    ccid_mock_set_slot_present(mock, index, 0, present);
}

void ccid_mock_time_extensions(ccid_mock *mock, int index, int count) {
    g_mutex_lock(&mock->lock);
    mock->readers[index].time_extensions = count;
    g_mutex_unlock(&mock->lock);
}

void ccid_mock_wrong_sequence(ccid_mock *mock, int index, int count) {
    g_mutex_lock(&mock->lock);
    mock->readers[index].wrong_sequence = count;
    g_mutex_unlock(&mock->lock);
}

void ccid_mock_slot_error(ccid_mock *mock, int index, uint8_t error) {
    g_mutex_lock(&mock->lock);
    mock->readers[index].slot_error = error;
    g_mutex_unlock(&mock->lock);
}

void ccid_mock_set_busy(ccid_mock *mock, int index, int busy) {
    g_mutex_lock(&mock->lock);
    mock->readers[index].busy = busy;
    g_mutex_unlock(&mock->lock);
}

void ccid_mock_unplug(ccid_mock *mock, int index) {
    g_mutex_lock(&mock->lock);
    mock->readers[index].unplugged = 1;
    g_mutex_unlock(&mock->lock);
    umockdev_testbed_uevent(mock->testbed, mock->readers[index].syspath, "remove");
}

void ccid_mock_announce(ccid_mock *mock, int index) {
    umockdev_testbed_uevent(mock->testbed, mock->readers[index].syspath, "add");
}

void ccid_mock_replug(ccid_mock *mock, int index) {
    g_mutex_lock(&mock->lock);
    struct reader *r = &mock->readers[index];
    r->unplugged = 0;
    while (!g_queue_is_empty(&r->answers)) g_bytes_unref(g_queue_pop_head(&r->answers));
    g_mutex_unlock(&mock->lock);
    umockdev_testbed_uevent(mock->testbed, r->syspath, "add");
}

int ccid_mock_apdu_count(ccid_mock *mock, int index) {
    int count = 0;
    g_mutex_lock(&mock->lock);
    struct reader *r = reader_at(mock, index);
    for (int i = 0; r && i < r->slot_count; i++) count += r->slots[i].stats.apdus;
    g_mutex_unlock(&mock->lock);
    return count;
}
