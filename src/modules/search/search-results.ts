import { documentTitle } from 'src/modules/chunk-index/document-context.js';
import type { SearchResultDto } from 'src/modules/search/dto/search.dto.js';
import { type CompleteRow, type Fused, fusionScore } from 'src/modules/search/fusion.js';

/**
 * A ranked chunk as the API shows it: the chunk, its score, the document it comes from and where in
 * it, all from the row the search read with the chunk; with `explain`, what its score was formed
 * from (`legs`: how many legs ran).
 */
export function toResult(
  entry: Fused & { row: CompleteRow },
  { explain, legs }: { explain: boolean; legs: number },
): SearchResultDto {
  const { row } = entry;
  const result: SearchResultDto = {
    chunk_id: row.id,
    content: row.content,
    score: round(entry.score),
    metadata: row.metadata,
    document_id: row.documentId,
    filename: row.filename,
    title: documentTitle(row.metadata, row.filename),
    chunk_index: row.ordinal,
    char_start: row.charStart,
    char_end: row.charEnd,
    page: row.page,
  };
  if (!explain) return result;
  result.score_basis = entry.basis;
  if (legs === 2) result.fusion_score = round(fusionScore(entry.rrf, legs));
  if (entry.semantic)
    Object.assign(result, {
      semantic_score: round(entry.semantic.score),
      semantic_rank: entry.semantic.rank,
      semantic_relevance: round(entry.semantic.relevance),
    });
  if (entry.keyword)
    Object.assign(result, {
      keyword_score: round(entry.keyword.score),
      keyword_rank: entry.keyword.rank,
      keyword_ceiling: round(entry.keyword.ceiling!),
      keyword_terms: entry.keyword.terms,
      keyword_relevance: round(entry.keyword.relevance),
    });
  if (entry.rerank !== undefined) result.rerank_score = round(entry.rerank);
  return result;
}

/** Scores to six decimals, as results show them (and as `min_score` compares them). */
export function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
