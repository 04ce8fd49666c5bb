import type { ChunkRow } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { LegHit } from 'src/modules/search/search.types.js';
import { fuse, withRows } from 'src/modules/search/fusion.js';

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

  it("orders by the weighted legs' scores over their best, scores by the strongest evidence against the best", () => {
    const fused = fuse({
      // Chunk 3 is found by both legs, weakly; chunk 1, first by the keyword leg alone, strongly.
      semantic: [hit('2', 0.9, undefined, 0.3), hit('3', 0.45, undefined, 0.2)],
      keyword: [hit('1', 20, undefined, 0.95), hit('3', 16, undefined, 0.4), hit('4', 2, undefined, 0.1)],
    });
    // Equal weights: 3 = (16/20 + 0.45/0.9) / 2 = 0.65; 1 = (1 + 0.5) / 2, the semantic leg's floor
    // (0.45/0.9) for a chunk it did not rank; 2 = (0.1 + 1) / 2; 4 = (0.1 + 0.5) / 2.
    expect(fused.map(({ chunkSeq, fusion }) => [chunkSeq, fusion])).toEqual([
      ['1', 0.75],
      ['3', 0.65],
      ['2', 0.55],
      ['4', 0.3],
    ]);
    // Each chunk's own relevance times its ratio to the best (0.95), raised to any below it.
    expect(fused.map(({ chunkSeq, score, basis }) => [chunkSeq, score, basis])).toEqual([
      ['1', 0.95, 'keyword'],
      ['3', 0.4 * (0.4 / 0.95), 'keyword'],
      ['2', 0.3 * (0.3 / 0.95), 'semantic'],
      ['4', 0.1 * (0.1 / 0.95), 'keyword'],
    ]);
    expect(fused[1]).toMatchObject({
      semantic: { rank: 2, relevance: 0.2 },
      keyword: { rank: 2, relevance: 0.4 },
    });
  });

  it('follows the weights: a leg weighted up leads the order, a leg of weight 0 takes no part', () => {
    const legs = {
      semantic: [hit('2', 0.9, undefined, 0.9), hit('1', 0.3, undefined, 0.2)],
      keyword: [hit('1', 20, undefined, 0.6), hit('2', 5, undefined, 0.3)],
    };
    const order = (keyword: number) =>
      fuse(legs, { keyword, semantic: 1 - keyword }).map(({ chunkSeq }) => chunkSeq);
    expect(order(0.8)).toEqual(['1', '2']);
    expect(order(0.2)).toEqual(['2', '1']);
    const keywordOnly = fuse(legs, { keyword: 1, semantic: 0 });
    // The semantic leg's 0.9 lends chunk 2 nothing: its score is its keyword relevance.
    expect(
      keywordOnly.map(({ chunkSeq, score, basis, semantic }) => [chunkSeq, score, basis, semantic]),
    ).toEqual([
      ['1', 0.6, 'keyword', undefined],
      ['2', 0.3 * (0.3 / 0.6), 'keyword', undefined],
    ]);
  });

  it('breaks ties by the older chunk, so that the same query always gets the same order', () => {
    const tied = fuse({ keyword: [hit('9', 3), hit('4', 3), hit('12', 3)] });
    expect(tied.map(({ chunkSeq }) => chunkSeq)).toEqual(['4', '9', '12']);
  });

  it('reads negative cosines as scores from the lowest up', () => {
    const fused = fuse({ semantic: [hit('1', -0.1), hit('2', -0.3)] });
    expect(fused.map(({ chunkSeq, fusion }) => [chunkSeq, Math.round(fusion * 1e9) / 1e9])).toEqual([
      ['1', 1],
      ['2', 0],
    ]);
  });

  it("scores a leg run alone by its relevance against the leg's best, in its order", () => {
    const fused = fuse({ keyword: [hit('7', 9, undefined, 0.8), hit('8', 3, undefined, 0.6)] });
    expect(fused.map(({ score, basis }) => [score, basis])).toEqual([
      [0.8, 'keyword'],
      [0.6 * (0.6 / 0.8), 'keyword'],
    ]);
    expect(fused[0].fusion).toBe(1);
    expect(fuse({ semantic: [hit('9', 0.1, undefined, 0)] })[0].score).toBe(0);
  });
});

describe('withRows', () => {
  const ranked = () =>
    fuse({
      semantic: [
        hit('1', 0.9, 'metadata'),
        hit('2', 0.89, 'row'),
        hit('3', 0.88, 'row'),
        hit('4', 0.1, 'row'),
      ],
      keyword: [hit('5', 9, 'metadata'), hit('2', 8.9), hit('3', 8.8), hit('6', 1.8)],
    });

  it('reads the rows of chunks that both legs ranked below the results shown, and nothing else', async () => {
    const { read, asked } = reader(['2', '3']);
    const top = await withRows(ranked(), 2, read);
    // Chunks 2 and 3 are second and third in both legs, close to the first: ahead of the first of
    // either leg alone, which the other leg did not rank.
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
