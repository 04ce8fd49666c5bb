import { htmlToStructuredText } from 'src/modules/ingestion/extraction/office.extractor.js';
import {
  extractCsv,
  extractJson,
  extractXml,
  extractYaml,
} from 'src/modules/ingestion/extraction/structured.extractor.js';
import { PermanentProcessingError, REASON_MAX_CHARACTERS } from 'src/modules/ingestion/ingestion.errors.js';

const text = (extracted: { sections: { text: string }[] }) =>
  extracted.sections.map((s) => s.text).join('\n');

describe('structured extractors', () => {
  it('keeps the header next to each CSV value', () => {
    expect(text(extractCsv('Team,Cups\n"Maple Leafs",13\nCanadiens,24\n'))).toBe(
      'Team: Maple Leafs | Cups: 13\nTeam: Canadiens | Cups: 24',
    );
  });

  it.each([
    ['semicolons', 'Team;Cups;Note\nMaple Leafs;13;"won 1967; last"\nCanadiens;24;most\n'],
    ['tabs', 'Team\tCups\tNote\nMaple Leafs\t13\twon 1967; last\nCanadiens\t24\tmost\n'],
    ['pipes', 'Team|Cups|Note\nMaple Leafs|13|won 1967; last\nCanadiens|24|most\n'],
  ])('reads a CSV delimited by %s as header: value pairs', (_, csv) => {
    expect(text(extractCsv(csv))).toBe(
      'Team: Maple Leafs | Cups: 13 | Note: won 1967; last\nTeam: Canadiens | Cups: 24 | Note: most',
    );
  });

  it('writes one path: value line per JSON value', () => {
    expect(text(extractJson('{"a": {"b": [1, "two"]}, "c": true, "d": null}'))).toBe(
      'a.b[0]: 1\na.b[1]: two\nc: true',
    );
  });

  it('reads YAML and XML into the same form', () => {
    expect(text(extractYaml('fruit:\n  name: pear\n  tree: yes\n'))).toBe(
      'fruit.name: pear\nfruit.tree: yes',
    );
    expect(
      text(extractXml('<?xml version="1.0" encoding="UTF-8"?><c><leader>Justin Trudeau</leader></c>')),
    ).toBe('c.leader: Justin Trudeau');
  });

  it('keeps XML values as written', () => {
    expect(text(extractXml('<r><zip>02134</zip><v>3.10</v><hex>0x1F</hex><t a="007">1e3</t></r>'))).toBe(
      'r.zip: 02134\nr.v: 3.10\nr.hex: 0x1F\nr.t.#text: 1e3\nr.t.@a: 007',
    );
  });

  it('reads mixed content as its text in order, words kept apart, beside its elements', () => {
    const xml = '<doc><p id="1">Alpha <b>bravo</b> charlie <i>delta</i></p><p>echo</p><x/></doc>';
    expect(text(extractXml(xml))).toBe(
      [
        'doc.p[0].b: bravo',
        'doc.p[0].i: delta',
        'doc.p[0].#text: Alpha bravo charlie delta',
        'doc.p[0].@id: 1',
        'doc.p[1]: echo',
      ].join('\n'),
    );
  });

  it('repeats no mixed content’s text more than once more, however deep, nor takes blank CDATA for text', () => {
    const depth = 90;
    const values = (xml: string) =>
      text(extractXml(xml))
        .split('\n')
        .map((line) => line.replace(/^[^ ]*: /, ''));
    // Each level's #text holds its own word and its text-only child's, not the words of all below.
    const nested = `${'<a>word '.repeat(depth)}${'</a>'.repeat(depth)}`;
    expect(new Set(values(nested))).toEqual(new Set(['word', 'word word']));
    const mixed = `${'<a>word <b>bold</b> '.repeat(depth)}${'</a>'.repeat(depth)}`;
    expect(new Set(values(mixed))).toEqual(new Set(['bold', 'word bold']));
    expect(text(extractXml('<a><![CDATA[ ]]><b>x</b></a>'))).toBe('a.b: x');
  });

  it('reads elements named like members of Object.prototype as any other', () => {
    expect(
      text(extractXml('<a><isPrototypeOf>1</isPrototypeOf><toLocaleString>x</toLocaleString></a>')),
    ).toBe('a.isPrototypeOf: 1\na.toLocaleString: x');
  });

  it('reads XML’s own entities and character references as the characters they stand for', () => {
    const xml =
      '<a t="x &lt; y">Fish &amp; Chips &#233;t&#xE9; &quot;ok&quot; &nope; &#x110000; &#xD800;</a>';
    expect(text(extractXml(xml))).toBe(
      'a.#text: Fish & Chips été "ok" &nope; &#x110000; &#xD800;\na.@t: x < y',
    );
  });

  it('reads every document of a multi-document YAML stream', () => {
    expect(text(extractYaml('a: 1\n---\nb: 2\n'))).toBe('a: 1\nb: 2');
  });

  it('fails JSON nested 50,000 levels deep (300 KB) at once with invalid_document', () => {
    const deep = '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000);
    expect(() => extractJson(deep)).toThrow(
      expect.objectContaining({
        code: 'invalid_document',
        details: { kind: 'JSON', reason: 'it nests more than 256 levels deep' },
      }),
    );
  });

  it('reads XML nested 100 tags deep, and refuses it one tag deeper', () => {
    const xml = (levels: number) => '<a>'.repeat(levels) + 'bottom' + '</a>'.repeat(levels);
    expect(text(extractXml(xml(100)))).toBe(`${Array(100).fill('a').join('.')}: bottom`);
    expect(() => extractXml(xml(101))).toThrow(expect.objectContaining({ code: 'invalid_document' }));
  });

  it("keeps a parser's long message short in the document's error", () => {
    let failure: PermanentProcessingError | undefined;
    try {
      extractXml('<a>'.repeat(1_000_000));
    } catch (error) {
      failure = error as PermanentProcessingError;
    }
    expect(failure?.code).toBe('invalid_document');
    const reason = failure?.details.reason as string;
    expect(reason.length).toBeLessThanOrEqual(REASON_MAX_CHARACTERS + 40);
    expect(failure!.message.length).toBeLessThan(REASON_MAX_CHARACTERS + 100);
  });

  it('reads JSON and YAML nested 256 levels deep, and refuses them one level deeper', () => {
    const json = (levels: number) => '['.repeat(levels) + '"bottom"' + ']'.repeat(levels);
    expect(text(extractJson(json(256)))).toBe(`${'[0]'.repeat(256)}: bottom`);
    expect(() => extractJson(json(257))).toThrow(expect.objectContaining({ code: 'invalid_document' }));
    // A flow sequence is valid YAML too.
    expect(text(extractYaml(json(256)))).toBe(`${'[0]'.repeat(256)}: bottom`);
    expect(() => extractYaml(json(257))).toThrow(
      expect.objectContaining({
        code: 'invalid_document',
        details: expect.objectContaining({ kind: 'YAML' }),
      }),
    );
  });

  it('fails at once, with invalid_document, a small JSON file whose keys would flatten to a gigabyte', () => {
    // 120 KB: one 100 KB key over 10,000 values, each line repeating the key.
    const wide = `{"${'k'.repeat(100_000)}": [${Array(10_000).fill(1).join(',')}]}`;
    expect(() => extractJson(wide)).toThrow(
      expect.objectContaining({
        code: 'invalid_document',
        details: { kind: 'JSON', reason: 'flattened to one line per value it would be over 32M characters' },
      }),
    );
  });

  it('reads a YAML file’s own tags as what they tag, and the schema’s tags as the schema says', () => {
    const yaml = [
      'Bucket: !Ref LogsBucket',
      'Name: !Sub [prefix, suffix]',
      'Props: !Custom {size: 3}',
      'blob: !!binary aGVsbG8=',
      'verbatim: !<tag:example.com,2000:app/x> z',
      'count: !!int "0x1F"',
      'nothing: !!null null',
    ].join('\n');
    expect(text(extractYaml(yaml))).toBe(
      [
        'Bucket: LogsBucket',
        'Name[0]: prefix',
        'Name[1]: suffix',
        'Props.size: 3',
        'blob: aGVsbG8=',
        'verbatim: z',
        'count: 0x1F',
      ].join('\n'),
    );
  });

  it('keeps YAML scalars as written, but for nulls', () => {
    const yaml =
      'zip: 02134\npython: [3.1, 3.10]\n3.1: old\n3.10: new\non: yes\nsize: 1e3\nday: 2002-12-14\na: ~\nb: null\nc:\n';
    expect(text(extractYaml(yaml))).toBe(
      'zip: 02134\npython[0]: 3.1\npython[1]: 3.10\n3.1: old\n3.10: new\non: yes\nsize: 1e3\nday: 2002-12-14',
    );
  });

  it('reads a YAML key that is a sequence or a mapping as its JSON text', () => {
    expect(text(extractYaml('? [a, b]\n: pair\n{x: 1}: map\n'))).toBe('["a","b"]: pair\n{"x":"1"}: map');
  });

  it('merges YAML merge keys into the mapping that holds them', () => {
    const yaml = 'defaults: &defaults\n  image: node\n  retries: 2\njob:\n  <<: *defaults\n  retries: 5\n';
    expect(text(extractYaml(yaml))).toBe(
      'defaults.image: node\ndefaults.retries: 2\njob.image: node\njob.retries: 5',
    );
  });

  it('merges more keys than js-yaml’s default limit: 600 jobs of 20 defaults', () => {
    const defaults = Array.from({ length: 20 }, (_, i) => `  key${i}: value${i}`).join('\n');
    const jobs = Array.from({ length: 600 }, (_, i) => `job${i}:\n  <<: *defaults\n  name: job ${i}`);
    const lines = text(extractYaml(`defaults: &defaults\n${defaults}\n${jobs.join('\n')}\n`)).split('\n');
    expect(lines).toHaveLength(20 + 600 * 21);
    expect(lines).toContain('job599.key19: value19');
  });

  it('reads YAML nested 256 levels deep in block style, and refuses it one level deeper', () => {
    const block = (levels: number) =>
      Array.from({ length: levels }, (_, i) => `${'  '.repeat(i)}k:`).join('\n') + ' bottom';
    expect(text(extractYaml(block(256)))).toBe(`${Array(256).fill('k').join('.')}: bottom`);
    expect(() => extractYaml(block(257))).toThrow(
      expect.objectContaining({
        code: 'invalid_document',
        details: { kind: 'YAML', reason: 'it nests more than 256 levels deep' },
      }),
    );
  });

  it('counts the values of all of a YAML stream’s documents together', () => {
    // Aliases repeat what they name: each document of six lines stands for 1,111,111 values (a million
    // empty strings, which add no characters, and the sequences holding them), under the limit alone;
    // ten of them are over it, and are refused without walking on to the end.
    const levels = ['l0: &l0 ["", "", "", "", "", "", "", "", "", ""]'];
    const tenOf = (anchor: string) => Array(10).fill(`*${anchor}`).join(', ');
    for (let i = 1; i <= 5; i++) levels.push(`l${i}: &l${i} [${tenOf(`l${i - 1}`)}]`);
    const document = levels.join('\n');
    expect(text(extractYaml(document))).toBe('');
    expect(() => extractYaml(Array(10).fill(document).join('\n---\n'))).toThrow(
      expect.objectContaining({
        details: { kind: 'YAML', reason: 'it holds more than 10,000,000 values (with its aliases expanded)' },
      }),
    );
  });

  it('names the line and column of a YAML syntax error', () => {
    expect(() => extractYaml('title: ok\nbad: a: b\n')).toThrow(
      expect.objectContaining({
        code: 'invalid_document',
        details: { kind: 'YAML', reason: 'bad indentation of a mapping entry at line 2, column 7' },
      }),
    );
  });

  it('fails a malformed JSON file with invalid_document', () => {
    expect(() => extractJson('{"a": ')).toThrow(PermanentProcessingError);
    try {
      extractJson('{"a": ');
    } catch (error) {
      expect((error as PermanentProcessingError).code).toBe('invalid_document');
    }
  });
});

describe('htmlToStructuredText', () => {
  it('keeps headings, list items and table rows', () => {
    const html =
      '<h1>Title</h1><p>Intro &amp; more</p><ul><li>one</li><li>two</li></ul>' +
      '<table><tr><td><p>Top left</p></td><td><p>Top right</p></td></tr></table>';
    expect(htmlToStructuredText(html)).toBe(
      '# Title\n\nIntro & more\n\n- one\n\n- two\n\nTop left | Top right',
    );
  });
});
