import type { ChunkRow } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { LegHit } from 'src/modules/search/search.types.js';
import { fuse, fusionScore, withRows } from 'src/modules/search/fusion.js';

const row = (seq: string, metadata?: Record<string, unknown>): ChunkRow => ({
  seq,
  id: `chk_${seq}`,
  content: `chunk ${seq}`,
  documentId: `doc_${seq}`,
  ordinal: Number(seq),
  page: null,
  charStart: 10 * Number(seq),
  charEnd: 10 * Number(seq) + 7,
  ...(metadata ? { metadata, filename: `file-${seq}.pdf` } : {}),
});

const hit = (seq: string, score: number, withRow?: 'row' | 'metadata', relevance = 0.5): LegHit => ({
  chunkSeq: seq,
  score,
  relevance,
  ...(withRow ? { row: row(seq, withRow === 'metadata' ? { seq } : undefined) } : {}),
});

/** A reader of the chunks in `stored`, which records what it was asked for. */
function reader(stored: string[]) {
  const asked: string[][] = [];
  const read = (seqs: string[]) => {
    asked.push(seqs);
    return Promise.resolve(
      new Map(seqs.filter((seq) => stored.includes(seq)).map((seq) => [seq, row(seq, { seq, read: true })])),
    );
  };
  return { read, asked };
}

describe('fuse', () => {
  it('keeps, for each chunk, a row with its metadata when either leg has one', () => {
    const fused = fuse({
      semantic: [hit('1', 0.9, 'row'), hit('2', 0.8, 'metadata')],
      keyword: [hit('1', 7, 'metadata'), hit('2', 6), hit('3', 5)],
    });
    expect(fused.map(({ chunkSeq, row }) => [chunkSeq, row?.metadata])).toEqual([
      ['1', { seq: '1' }],
      ['2', { seq: '2' }],
      ['3', undefined],
    ]);
    expect(fused[2].row).toBeUndefined();
  });

  it('orders by reciprocal rank, scores by the strongest evidence against the best, never rising down the list', () => {
    const fused = fuse({
      // Chunk 3 is found by both legs, weakly; chunk 1, first by the keyword leg alone, strongly.
      semantic: [hit('2', 0.9, undefined, 0.3), hit('3', 0.5, undefined, 0.2)],
      keyword: [hit('1', 20, undefined, 0.95), hit('3', 4, undefined, 0.4), hit('4', 1, undefined, 0.1)],
    });
    // Each chunk's own relevance times its ratio to the best (0.95), then raised to any below it.
    expect(fused.map(({ chunkSeq, score, basis }) => [chunkSeq, score, basis])).toEqual([
      ['3', 0.95, 'result_below'],
      ['1', 0.95, 'keyword'],
      ['2', 0.3 * (0.3 / 0.95), 'semantic'],
      ['4', 0.1 * (0.1 / 0.95), 'keyword'],
    ]);
    expect(fused[0]).toMatchObject({
      semantic: { rank: 2, relevance: 0.2 },
      keyword: { rank: 2, relevance: 0.4 },
    });
    expect(fusionScore(fused[0].rrf, 2)).toBeCloseTo(61 / 62);
  });

  it("scores a leg run alone by its relevance against the leg's best, in its order", () => {
    const fused = fuse({ keyword: [hit('7', 9, undefined, 0.8), hit('8', 3, undefined, 0.6)] });
    expect(fused.map(({ score, basis }) => [score, basis])).toEqual([
      [0.8, 'keyword'],
      [0.6 * (0.6 / 0.8), 'keyword'],
    ]);
    expect(fusionScore(fused[0].rrf, 1)).toBe(1);
    expect(fuse({ semantic: [hit('9', 0.1, undefined, 0)] })[0].score).toBe(0);
  });
});

describe('withRows', () => {
  const ranked = () =>
    fuse({
      semantic: [hit('1', 0.9, 'metadata'), hit('2', 0.8, 'row'), hit('3', 0.7, 'row'), hit('4', 0.6, 'row')],
      keyword: [hit('5', 9, 'metadata'), hit('2', 8), hit('3', 7), hit('6', 6)],
    });

  it('reads the rows of chunks that both legs ranked below the results shown, and nothing else', async () => {
    const { read, asked } = reader(['2', '3']);
    const top = await withRows(ranked(), 2, read);
    // Chunks 2 and 3 are second and third in both legs: ahead of the first of either leg alone.
    expect(top.map(({ chunkSeq }) => chunkSeq)).toEqual(['2', '3']);
    expect(asked).toEqual([['2', '3']]);
    expect(top.map(({ row }) => row.metadata)).toEqual([
      { seq: '2', read: true },
      { seq: '3', read: true },
    ]);
    expect(top.map(({ row }) => [row.filename, row.charStart])).toEqual([
      ['file-2.pdf', 20],
      ['file-3.pdf', 30],
    ]);

    const alone = reader([]);
    const first = fuse({ semantic: [hit('1', 0.9, 'metadata')], keyword: [hit('5', 9, 'metadata')] });
    expect((await withRows(first, 2, alone.read)).map(({ row }) => [row.metadata, row.filename])).toEqual([
      [{ seq: '1' }, 'file-1.pdf'],
      [{ seq: '5' }, 'file-5.pdf'],
    ]);
    expect(alone.asked).toEqual([]);
  });

  it('leaves out a chunk deleted since it was ranked, and takes the next in its place', async () => {
    const { read, asked } = reader(['3', '4', '6']); // 2 is gone
    const top = await withRows(ranked(), 3, read);
    expect(top.map(({ chunkSeq }) => chunkSeq)).toEqual(['3', '1', '5']);
    // The first round reads 2 and 3; the second, one entry for the place 2 left, has its row.
    expect(asked).toEqual([['2', '3']]);
    expect(top.map(({ row }) => row.content)).toEqual(['chunk 3', 'chunk 1', 'chunk 5']);
  });

  it('reads further rounds while deleted chunks leave places, and stops when the ranking runs out', async () => {
    const { read, asked } = reader(['6']);
    const top = await withRows(ranked(), 4, read);
    expect(top.map(({ chunkSeq }) => chunkSeq)).toEqual(['1', '5', '6']);
    expect(asked).toEqual([
      ['2', '3'],
      ['4', '6'],
    ]);
    expect(await withRows(ranked(), 10, reader([]).read)).toHaveLength(2);
  });
});
