import { readFile } from 'node:fs/promises';
import { deflateRawSync } from 'node:zlib';
import JSZip from 'jszip';

const builtins = () => ({ parse: JSON.parse, push: Array.prototype.push });

/**
 * A ZIP archive of one deflated entry whose headers declare `declaredSize` bytes, whatever the entry
 * really holds: the zip bomb that lies about its sizes.
 */
function lyingZip(name: string, content: Buffer, declaredSize: number): Buffer {
  const data = deflateRawSync(content);
  const fileName = Buffer.from(name);
  const sizes = (header: Buffer, at: number) => {
    header.writeUInt32LE(0, at); // CRC-32: never reached, the count stops first
    header.writeUInt32LE(data.length, at + 4);
    header.writeUInt32LE(declaredSize, at + 8);
  };
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8); // deflate
  sizes(local, 14);
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  sizes(central, 16);
  central.writeUInt16LE(fileName.length, 28);
  const centralOffset = local.length + fileName.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + fileName.length, 12);
  end.writeUInt32LE(centralOffset, 16);
  return Buffer.concat([local, fileName, data, central, fileName, end]);
}

describe('office extractor', () => {
  it('leaves JavaScript builtins alone until a PDF is read (pdf.js polyfills them process-wide)', async () => {
    const before = builtins();
    await import('src/modules/ingestion/extraction/office.extractor.js');
    expect(builtins()).toEqual(before);
  });

  it('counts what an archive really unpacks to, not the sizes it declares', async () => {
    const { openZip } = await import('src/modules/ingestion/extraction/office.extractor.js');
    const bomb = lyingZip('word/document.xml', Buffer.alloc(3_000_000), 5_000);
    expect(bomb.length).toBeLessThan(10_000);
    await expect(openZip(bomb, 'DOCX', 1_000_000)).rejects.toMatchObject({
      code: 'invalid_document',
      message: 'The DOCX file cannot be read: it unpacks to more than 1000000 bytes',
    });
    const honest = lyingZip('word/document.xml', Buffer.alloc(3_000), 3_000);
    await expect(openZip(honest, 'DOCX', 1_000_000)).resolves.toBeDefined();
  });

  it('refuses a DOCX that lies about unpacking past the real limit, before the parser inflates it', async () => {
    const { extractDocx } = await import('src/modules/ingestion/extraction/office.extractor.js');
    const bomb = lyingZip('word/document.xml', Buffer.alloc(210 * 1024 * 1024), 5_000);
    await expect(extractDocx(bomb)).rejects.toMatchObject({
      code: 'invalid_document',
      message: expect.stringContaining('it unpacks to more than 209715200 bytes'),
    });
  });

  it('decodes each entity once, and keeps a reference beyond Unicode as written', async () => {
    const { decodeEntities, htmlToStructuredText } =
      await import('src/modules/ingestion/extraction/office.extractor.js');
    expect(decodeEntities('&#x110000; &#55296; &#x41;&amp;lt;')).toBe('&#x110000; &#55296; A&lt;');
    // Mammoth escapes the literal text `Top &lt;left&gt; R&amp;D` once; it must come back as written.
    const cell = 'Top &amp;lt;left&amp;gt; R&amp;amp;D';
    expect(htmlToStructuredText(`<table><tr><td>${cell}</td></tr></table><p>${cell}</p>`)).toBe(
      'Top &lt;left&gt; R&amp;D\n\nTop &lt;left&gt; R&amp;D',
    );
  });

  describe('a PPTX with a corrupt slide', () => {
    const SAMPLE = '../shared/fixtures/pptx/sample-presentation.pptx';
    /** The sample presentation with its second slide's XML replaced. */
    const withSlide2 = async (xml: (original: string) => string) => {
      const zip = await JSZip.loadAsync(await readFile(SAMPLE));
      const original = await zip.file('ppt/slides/slide2.xml')!.async('string');
      zip.file('ppt/slides/slide2.xml', xml(original));
      return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    };

    it('reads all four slides of the intact file, and a slide stored as UTF-16 with its BOM', async () => {
      const { extractPptx } = await import('src/modules/ingestion/extraction/office.extractor.js');
      expect((await extractPptx(await readFile(SAMPLE))).sections).toHaveLength(4);
      const zip = await JSZip.loadAsync(await readFile(SAMPLE));
      const slide = await zip.file('ppt/slides/slide2.xml')!.async('string');
      const utf16 = slide.replace('encoding="UTF-8"', 'encoding="UTF-16"');
      zip.file(
        'ppt/slides/slide2.xml',
        Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(utf16, 'utf16le')]),
      );
      const text = await extractPptx(await zip.generateAsync({ type: 'nodebuffer' }));
      expect(text.sections[1].text).toContain('This is the first content slide');
    });

    it.each([
      ['cut short', (xml: string) => xml.slice(0, Math.floor(xml.length / 2))],
      ['empty', () => ''],
      ['random bytes', () => 'x\u0001<<>>&&garbage'],
    ])(
      'fails as invalid_document naming the slide when it is %s (it was silently left out)',
      async (_case, xml) => {
        const { extractPptx } = await import('src/modules/ingestion/extraction/office.extractor.js');
        await expect(extractPptx(await withSlide2(xml))).rejects.toMatchObject({
          code: 'invalid_document',
          message: expect.stringContaining('ppt/slides/slide2.xml is not well-formed XML'),
        });
      },
    );
  });

  it('reads an empty run <a:t/> as nothing, not as the start of the next run', async () => {
    const { drawingText } = await import('src/modules/ingestion/extraction/office.extractor.js');
    const xml =
      '<a:p><a:r><a:t/></a:r><a:r><a:rPr lang="en"/><a:t>Title Slide</a:t></a:r></a:p>' +
      '<a:p><a:r><a:t xml:space="preserve"/></a:r><a:r><a:t />and<a:t>Subtitle</a:t></a:r></a:p>' +
      '<a:p><a:r><a:t xml:space="preserve">Second </a:t></a:r><a:r><a:t>line</a:t></a:r></a:p>';
    expect(drawingText(xml)).toBe('Title Slide\nSubtitle\nSecond line');
  });
});
