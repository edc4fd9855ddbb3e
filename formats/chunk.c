/* The 40-byte chunk header, shared by the writer, the reader and the tools. */
#include "format_internal.h"

const uint8_t wrf_file_magic[WRF_MAGIC_LEN] = {0x89, 'W', 'R', 'T', 0x0d, 0x0a, 0x1a, 0x0a};

void wrf_chunk_header_encode(uint8_t out[WRF_CHUNK_HEADER_SIZE], const wrf_chunk_header *h)
{
    wrf_put32(out, WRF_CHUNK_MAGIC);
    out[4] = h->type;
    out[5] = h->codec;
    wrf_put16(out + 6, 0);
    wrf_put32(out + 8, h->raw_size);
    wrf_put32(out + 12, h->stored_size);
    wrf_put32(out + 16, h->count);
    wrf_put32(out + 20, h->aux);
    wrf_put64(out + 24, h->first_index);
    wrf_put32(out + 32, h->payload_crc);
    wrf_put32(out + 36, wrf_crc32c(0, out, 36));
}

int wrf_chunk_header_decode(const uint8_t in[WRF_CHUNK_HEADER_SIZE], wrf_chunk_header *h)
{
    if (wrf_get32(in) != WRF_CHUNK_MAGIC || wrf_get32(in + 36) != wrf_crc32c(0, in, 36))
        return -1;
    h->type = in[4];
    h->codec = in[5];
    h->raw_size = wrf_get32(in + 8);
    h->stored_size = wrf_get32(in + 12);
    h->count = wrf_get32(in + 16);
    h->aux = wrf_get32(in + 20);
    h->first_index = wrf_get64(in + 24);
    h->payload_crc = wrf_get32(in + 32);
    return 0;
}
