import zlib from 'node:zlib';
import { isDecompressionError } from 'src/common/filters/all-exceptions.filter.js';

/** The error zlib gives for `body` decompressed as `decompress` does it. */
function failure(decompress: (body: Buffer) => Buffer, body: Buffer): unknown {
  try {
    decompress(body);
  } catch (error) {
    return error;
  }
  throw new Error('it decompressed');
}

const withCode = (code: string) => Object.assign(new Error('x'), { code });

describe('isDecompressionError', () => {
  it.each([
    ['gzip', () => failure(zlib.gunzipSync, Buffer.from('not gzip'))],
    ['deflate', () => failure(zlib.inflateSync, Buffer.from('not deflate'))],
    ['br', () => failure(zlib.brotliDecompressSync, Buffer.from('not brotli at all'))],
    ['truncated gzip', () => failure(zlib.gunzipSync, zlib.gzipSync('some text').subarray(0, 12))],
  ])('knows zlib’s error for a bad %s body', (_case, error) => {
    expect(isDecompressionError(error())).toBe(true);
  });

  // zstd's data errors carry zstd's own names.
  it.each(['ZSTD_error_prefix_unknown', 'ZSTD_error_corruption_detected', 'ZSTD_error_checksum_wrong'])(
    'knows zstd’s %s',
    (code) => expect(isDecompressionError(withCode(code))).toBe(true),
  );

  it.each(['Z_MEM_ERROR', 'ZSTD_error_memory_allocation', 'ERR_INVALID_ARG_TYPE', 'ECONNRESET'])(
    'leaves %s to the server (not the body’s fault)',
    (code) => expect(isDecompressionError(withCode(code))).toBe(false),
  );

  it('wants an Error', () => {
    expect(isDecompressionError({ code: 'Z_DATA_ERROR' })).toBe(false);
  });
});
