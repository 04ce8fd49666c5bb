import { indexContext } from 'src/modules/chunk-index/document-context.js';
import { chunkText, headingPaths } from 'src/modules/embeddings/chunking/chunker.js';
import { chunkContexts } from 'src/modules/transfer/chunk-context.js';

const words = { count: (text: string) => text.split(/\s+/).filter(Boolean).length };

describe('chunkContexts', () => {
  it('makes again the context indexing gave each chunk of a Markdown text', () => {
    const text = [
      '# Lamps',
      'Every lamp has a wick.\nAnd a chimney of glass.',
      '## Wicks',
      'Trim the wick flat before each lighting so that it burns evenly and clean.',
      '```\n# not a heading\n```',
      '## Chimneys',
      'Wash the chimney in warm water.\n\n\n\nDry it fully.',
      '# Storage',
      'Keep spare wicks dry.',
    ].join('\n\n');
    const extracted = { format: 'markdown' as const, sections: [{ text }] };
    const chunks = chunkText(extracted, words, { maxTokens: 12, overlapTokens: 3 });
    expect(chunks.length).toBeGreaterThan(4);
    const paths = headingPaths(extracted, chunks);
    const expected = chunks.map((_, i) => indexContext('kestrel lamps', paths[i]));
    const contextOf = chunkContexts({ kind: 'markdown', filename: 'kestrel-lamps.md', metadata: {} }, chunks);
    expect(chunks.map((_, i) => contextOf(i))).toEqual(expected);
    expect(expected.some((context) => context?.includes('Wicks'))).toBe(true);
  });

  it('gives a text of another kind its title alone', () => {
    const contextOf = chunkContexts({ kind: 'text', filename: null, metadata: { title: 'Notes' } }, []);
    expect(contextOf(3)).toBe('Notes\nNotes');
  });
});
