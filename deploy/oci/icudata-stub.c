/*
 * An empty ICU data library for the OCI image, in place of Debian's libicudata (31 MB, two
 * fifths of the image). Only libxml2 links ICU (for xmlsec1, which samael's SAML signature
 * checks use), and libxml2 reads UTF-8, UTF-16, ISO-8859-1 and ASCII without it: ICU is its
 * fallback for other encodings, which no SAML identity provider sends. ICU supports exactly
 * this arrangement ("stubdata": a data library holding an empty table of contents, for
 * installations that load their data from files); with no data files present, a conversion
 * ICU would have done fails with an error instead. make test runs the SAML tests with this
 * library in place (scripts/packaging/icu-stub-check.sh).
 *
 * ICU_DATA_ENTRY is ICU's versioned entry symbol (icudt72_dat for ICU 72), set by
 * stage-rootfs.sh from the library it replaces.
 */
#include <stdint.h>

struct data_info {
    uint16_t size, reserved_word;
    uint8_t is_big_endian, charset_family, sizeof_uchar, reserved_byte;
    uint8_t data_format[4], format_version[4], data_version[4];
};

/* ICU's memory-mapped data header, then a table of contents with no entries. */
struct data_header {
    uint16_t header_size;
    uint8_t magic1, magic2;
    struct data_info info;
    char padding[8];
    uint32_t count, reserved;
    struct { const char *name; const void *data; } toc[1];
};

__attribute__((visibility("default"))) const struct data_header ICU_DATA_ENTRY = {
    32, 0xda, 0x27,
    { sizeof(struct data_info), 0, 0 /* little-endian */, 0 /* ASCII family */, 2 /* UChar */, 0,
      { 'T', 'o', 'C', 'P' }, { 1, 0, 0, 0 }, { 0, 0, 0, 0 } },
    { 0 }, 0, 0, { { 0, 0 } },
};
