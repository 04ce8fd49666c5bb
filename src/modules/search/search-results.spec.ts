import type { CompleteRow, Fused } from 'src/modules/search/fusion.js';
import { toResult } from 'src/modules/search/search-results.js';

const row = (document: Partial<Pick<CompleteRow, 'metadata' | 'filename'>> = {}): CompleteRow => ({
  seq: '7',
  id: 'chk_7',
  content: 'The warranty covers water damage.',
  documentId: 'doc_1',
  ordinal: 3,
  page: 2,
  charStart: 120,
  charEnd: 153,
  metadata: {},
  filename: null,
  ...document,
});

const entry = (chunk: CompleteRow): Fused & { row: CompleteRow } => ({
  chunkSeq: chunk.seq,
  row: chunk,
  fusion: 0.9,
  semantic: { rank: 1, score: 0.81, relevance: 0.8 },
  keyword: { rank: 1, score: 12.4, relevance: 0.7, ceiling: 27.9, terms: 3 },
  score: 0.8,
  basis: 'semantic',
});

describe('toResult', () => {
  it('names the source of the chunk: its document, title, file name and place', () => {
    const chunk = row({ metadata: { title: 'Router guide', category: 'guide' }, filename: 'router.pdf' });
    expect(toResult(entry(chunk), { explain: false })).toEqual({
      chunk_id: 'chk_7',
      content: 'The warranty covers water damage.',
      score: 0.8,
      metadata: { title: 'Router guide', category: 'guide' },
      document_id: 'doc_1',
      filename: 'router.pdf',
      title: 'Router guide',
      chunk_index: 3,
      char_start: 120,
      char_end: 153,
      page: 2,
    });
  });

  it.each([
    ['a metadata title', { metadata: { title: 'Cells' }, filename: 'a.pdf' }, 'Cells'],
    ['the file name, for a blank metadata title', { metadata: { title: '  ' }, filename: 'a.pdf' }, 'a.pdf'],
    [
      'the file name, for a title that is not a string',
      { metadata: { title: 7 }, filename: 'a.pdf' },
      'a.pdf',
    ],
    ['null, for text without a title', { metadata: { title: '' }, filename: null }, null],
  ])('takes as title %s', (_case, document, title) => {
    expect(toResult(entry(row(document)), { explain: false }).title).toBe(title);
  });

  it('adds what the score was formed from when explained', () => {
    const fusion = { weights: { keyword: 0.7, semantic: 0.3 }, source: 'dataset' as const };
    expect(toResult(entry(row()), { explain: true, fusion })).toMatchObject({
      page: 2,
      score_basis: 'semantic',
      fusion_score: 0.9,
      fusion_weights: { keyword: 0.7, semantic: 0.3 },
      fusion_weights_source: 'dataset',
      semantic_rank: 1,
      keyword_ceiling: 27.9,
      keyword_terms: 3,
    });
  });

  it('leaves the fusion out of a leg run alone', () => {
    const explained = toResult(entry(row()), { explain: true });
    expect(explained).not.toHaveProperty('fusion_score');
    expect(explained).not.toHaveProperty('fusion_weights');
  });
});
