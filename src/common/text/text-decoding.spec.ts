import { decodeText, stripControlCharacters } from 'src/common/text/text-decoding.js';

describe('decodeText', () => {
  it.each([
    ['UTF-8 with a BOM', Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('können')]), 'utf-8'],
    [
      'UTF-16 LE with a BOM',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('können', 'utf16le')]),
      'utf-16le',
    ],
    [
      'UTF-16 BE with a BOM',
      Buffer.from([0xfe, 0xff, 0, 0x6b, 0, 0xf6, 0, 0x6e, 0, 0x6e, 0, 0x65, 0, 0x6e]),
      'utf-16be',
    ],
    ['UTF-16 LE without a BOM', Buffer.from('können und wollen', 'utf16le'), 'utf-16le'],
    ['plain UTF-8', Buffer.from('können'), 'utf-8'],
    ['Latin-1', Buffer.from('können', 'latin1'), 'windows-1252'],
  ])('reads %s', (_case, bytes, encoding) => {
    const decoded = decodeText(bytes);
    expect(decoded.encoding).toBe(encoding);
    expect(decoded.text.startsWith('k')).toBe(true);
    expect(decoded.text).toContain('önn');
  });
});

describe('stripControlCharacters', () => {
  it('drops NUL and other controls but keeps tabs and line breaks', () => {
    expect(stripControlCharacters('a\u0000b\tc\nd\r\ne\u001b')).toBe('ab\tc\nd\r\ne');
  });
});
