import { documentTitle, indexContext, indexedTitle } from 'src/modules/chunk-index/document-context.js';

describe('documentTitle', () => {
  it("is the metadata's title, else the filename, else null", () => {
    expect(documentTitle({ title: 'Cells' }, 'a.pdf')).toBe('Cells');
    expect(documentTitle({ title: '  ' }, 'a.pdf')).toBe('a.pdf');
    expect(documentTitle({ title: 7 }, null)).toBeNull();
  });
});

describe('indexedTitle', () => {
  it("is the metadata's title, else the filename as words, else null", () => {
    expect(indexedTitle({ title: 'Cells' }, 'a.pdf')).toBe('Cells');
    expect(indexedTitle({}, 'kestrel-guide_v2.md')).toBe('kestrel guide v2');
    expect(indexedTitle({}, 'notes')).toBe('notes');
    expect(indexedTitle({}, null)).toBeNull();
  });
});

describe('indexContext', () => {
  it('joins the title, weighed twice, and the headings, each cut to 200 characters, or is null without either', () => {
    expect(indexContext('Cells', ['Energy', 'ATP'])).toBe('Cells\nCells\nEnergy\nATP');
    expect(indexContext(null, ['Energy'])).toBe('Energy');
    expect(indexContext(null, [])).toBeNull();
    expect(indexContext('x'.repeat(500), [])).toBe(`${'x'.repeat(200)}\n${'x'.repeat(200)}`);
  });
});
