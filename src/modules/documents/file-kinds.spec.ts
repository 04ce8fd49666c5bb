import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { detectFileType } from 'src/modules/documents/file-kinds.js';

const fixture = (path: string) => readFile(`../shared/fixtures/${path}`);

describe('detectFileType', () => {
  it.each([
    ['pdf/fake-memo.pdf', 'pdf'],
    ['docx/tables.docx', 'docx'],
    ['pptx/sample-presentation.pptx', 'pptx'],
    ['img/phototest.jpg', 'image'],
    ['csv/stanley-cups.csv', 'csv'],
    ['code/BubbleSort.java', 'code'],
    ['yaml/simple.yaml', 'yaml'],
  ])('recognises %s as %s', async (path, kind) => {
    const detection = await detectFileType(path.split('/')[1], await fixture(path));
    expect(detection).toMatchObject({ ok: true, type: { kind }, sniffed: false });
  });

  describe('a name without an extension (a Blob in FormData is called "blob")', () => {
    const markdown = Buffer.from('# Install\n\nRun the installer.\n');

    it.each([
      ['text/markdown', 'markdown'],
      ['text/csv; charset=utf-8', 'csv'],
      ['application/json', 'json'],
      ['application/octet-stream', 'text'],
      [undefined, 'text'],
    ])('reads text declared %s as %s', async (declared, kind) => {
      const detection = await detectFileType('blob', markdown, declared);
      expect(detection).toMatchObject({ ok: true, type: { kind } });
    });

    it('reads binary content by its signature, whatever the part declares', async () => {
      const detection = await detectFileType('blob', await fixture('img/phototest.jpg'), 'text/markdown');
      expect(detection).toMatchObject({ ok: true, type: { kind: 'image' } });
    });

    it('refuses binary content of no supported format declared as text', async () => {
      const zip = Buffer.from([0x50, 0x4b, 0x03, 0x04, ...new Array<number>(60).fill(0)]);
      expect(await detectFileType('blob', zip, 'text/markdown')).toMatchObject({ ok: false });
    });

    it('leaves a name with an extension to the extension', async () => {
      expect(await detectFileType('notes.exe', markdown, 'text/markdown')).toMatchObject({ ok: false });
    });
  });

  it('reads a PNG named .pdf as the image it is', async () => {
    const detection = await detectFileType('png-renamed-as.pdf', await fixture('pdf/png-renamed-as.pdf'));
    expect(detection).toMatchObject({
      ok: true,
      type: { kind: 'image', mediaType: 'image/png' },
      sniffed: true,
    });
  });

  it('trusts the extension of a broken binary file, so that its extractor reports the damage', async () => {
    const detection = await detectFileType('broken.pdf', Buffer.from('not really a pdf'));
    expect(detection).toMatchObject({ ok: true, type: { kind: 'pdf' } });
    // A DOCX reduced to a bare ZIP archive, and a password-protected one (an OLE compound file).
    const zip = Buffer.from('PK\x03\x04\x14\x00\x00\x00\x00\x00', 'latin1');
    expect(await detectFileType('damaged.docx', zip)).toMatchObject({ ok: true, type: { kind: 'docx' } });
    const ole = Buffer.concat([Buffer.from('d0cf11e0a1b11ae1', 'hex'), Buffer.alloc(504)]);
    expect(await detectFileType('locked.pptx', ole)).toMatchObject({ ok: true, type: { kind: 'pptx' } });
  });

  it.each([
    ['gif', 'text.png', 'image/gif'],
    ['webp', 'photo.jpg', 'image/webp'],
    ['tiff', 'scan.pdf', 'image/tiff'],
    ['avif', 'photo.jpeg', 'image/avif'],
  ] as const)(
    'refuses %s content behind the supported extension of %s, naming the type it is',
    async (format, name, mime) => {
      const image = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'white' } })
        .toFormat(format)
        .toBuffer();
      expect(await detectFileType(name, image)).toEqual({
        ok: false,
        reason: `content is ${mime}, which is not supported`,
        detectedType: mime,
      });
    },
  );

  it('refuses unknown extensions and unsupported binary content', async () => {
    expect(await detectFileType('movie.mp4', Buffer.from('....'))).toMatchObject({ ok: false });
    const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
    expect(await detectFileType('image.gif', gif)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('image/gif'),
    });
  });
});
