/*
 * A Proxima driver in C (Docs/driver-protocol.md): one reader, "Proxima C sample reader", with a scripted card that
 * is always in the field. The card answers SELECT (00 A4 ..) with 9000, GET CHALLENGE (00 84 00 00 08) with the
 * bytes 01..08 and 9000, and any other command with its own four header bytes and 9000.
 *
 * Build: make (or: cc -O2 -Wall -Wextra -o sample_card_driver sample_card_driver.c)
 *
 * Frames are a 4-byte big-endian length and that many bytes of JSON. The kernel writes compact JSON with the members
 * this driver needs ("type", "id", "apdu"); the small scanner below finds them and is not a general JSON parser: a
 * real driver should use one (cJSON, jansson, ...). Log to stderr only; stdout carries frames.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FRAME (1u << 20)

static int read_exactly(unsigned char *buffer, size_t count) {
    size_t done = 0;
    while (done < count) {
        ssize_t n = read(0, buffer + done, count - done);
        if (n == 0) return 0;
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        done += (size_t)n;
    }
    return 1;
}

static int write_frame(const char *json) {
    size_t length = strlen(json);
    unsigned char header[4] = {(unsigned char)(length >> 24), (unsigned char)(length >> 16),
                               (unsigned char)(length >> 8), (unsigned char)length};
    /* One write per frame keeps the frame whole on the pipe and costs one system call. */
    static unsigned char out[MAX_FRAME + 4];
    if (length > MAX_FRAME) return 0;
    memcpy(out, header, 4);
    memcpy(out + 4, json, length);
    size_t done = 0;
    while (done < length + 4) {
        ssize_t n = write(1, out + done, length + 4 - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        done += (size_t)n;
    }
    return 1;
}

/* The string value of member `key` (as "key":"value") copied into `value`; 0 when absent or too long. */
static int string_member(const char *json, const char *key, char *value, size_t capacity) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *start = strstr(json, pattern);
    if (!start) return 0;
    start += strlen(pattern);
    const char *end = strchr(start, '"');
    if (!end || (size_t)(end - start) >= capacity) return 0;
    memcpy(value, start, (size_t)(end - start));
    value[end - start] = 0;
    return 1;
}

static long long integer_member(const char *json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *start = strstr(json, pattern);
    return start ? strtoll(start + strlen(pattern), NULL, 10) : -1;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The card: fills `answer` with hex digits of its response to `apdu` (hex). */
static void respond(const char *apdu, char *answer) {
    unsigned char command[4] = {0, 0, 0, 0};
    size_t length = strlen(apdu) / 2;
    for (size_t i = 0; i < 4 && i < length; i++) {
        int high = hex_value(apdu[2 * i]), low = hex_value(apdu[2 * i + 1]);
        command[i] = (unsigned char)((high < 0 || low < 0) ? 0 : high << 4 | low);
    }
    if (length >= 2 && command[0] == 0x00 && command[1] == 0xA4) {
        strcpy(answer, "9000");
    } else if (length == 5 && command[0] == 0x00 && command[1] == 0x84 && strcmp(apdu + 8, "08") == 0) {
        strcpy(answer, "01020304050607089000");
    } else {
        snprintf(answer, 16, "%02X%02X%02X%02X9000", command[0], command[1], command[2], command[3]);
    }
}

int main(void) {
    static char message[MAX_FRAME + 1];
    static char apdu[2 * 65544 + 1];
    static char reply[2 * 65544 + 256];
    unsigned char header[4];

    write_frame("{\"type\":\"hello\",\"protocol\":\"1.0\",\"driver\":{\"name\":\"c-sample\",\"version\":\"1.0\"}}");
    for (;;) {
        if (!read_exactly(header, 4)) return 0;
        uint32_t length = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 | header[3];
        if (length == 0 || length > MAX_FRAME) {
            fprintf(stderr, "c-sample: refusing a frame of %u bytes\n", length);
            return 2;
        }
        if (!read_exactly((unsigned char *)message, length)) return 0;
        message[length] = 0;

        char type[32] = "";
        string_member(message, "type", type, sizeof type);
        long long id = integer_member(message, "id");
        if (strcmp(type, "hello") == 0) {
            write_frame("{\"type\":\"readers\",\"readers\":[{\"id\":\"0\",\"name\":\"Proxima C sample reader\"}]}");
            write_frame("{\"type\":\"cardPresent\",\"reader\":\"0\"}");
            fprintf(stderr, "c-sample: ready\n");
        } else if (strcmp(type, "bye") == 0) {
            return 0;
        } else if (strcmp(type, "connect") == 0) {
            snprintf(reply, sizeof reply,
                     "{\"type\":\"result\",\"id\":%lld,\"atr\":\"3B8080010101\",\"uid\":\"04C0FFEE\","
                     "\"technology\":\"iso14443A\"}",
                     id);
            write_frame(reply);
        } else if (strcmp(type, "transmit") == 0) {
            char answer[64];
            if (!string_member(message, "apdu", apdu, sizeof apdu)) {
                snprintf(reply, sizeof reply,
                         "{\"type\":\"error\",\"id\":%lld,\"code\":\"invalidRequest\",\"message\":\"no apdu\"}", id);
            } else {
                respond(apdu, answer);
                snprintf(reply, sizeof reply, "{\"type\":\"result\",\"id\":%lld,\"apdu\":\"%s\"}", id, answer);
            }
            write_frame(reply);
        } else if (strcmp(type, "disconnect") == 0) {
            snprintf(reply, sizeof reply, "{\"type\":\"result\",\"id\":%lld}", id);
            write_frame(reply);
        } else {
            snprintf(reply, sizeof reply,
                     "{\"type\":\"error\",\"id\":%lld,\"code\":\"unsupported\",\"message\":\"%s\"}", id, type);
            write_frame(reply);
        }
    }
}
