import { crc32, deflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * A black PNG of any size, small on disk: one bit a pixel, the rows of zeros deflated (16384 × 16384
 * is 32 KB, made in about 50 ms). With `headerOnly`, the pixels stop after the first row: the file
 * claims its size in a header that image readers can read (40000 × 40000 in 150 bytes), but it cannot
 * be decoded.
 */
export function blackPng(width: number, height: number, { headerOnly = false } = {}): Buffer {
  const header = Buffer.alloc(13); // bit depth 1, grey, deflate, no filter method or interlace
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 1;
  const row = 1 + Math.ceil(width / 8); // a filter byte (0: none), then the row's bits
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.alloc(row * (headerOnly ? 1 : height)))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
