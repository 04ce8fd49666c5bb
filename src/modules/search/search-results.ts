import { documentTitle } from 'src/modules/chunk-index/document-context.js';
import type { SearchResultDto, WeightsSource } from 'src/modules/search/dto/search.dto.js';
import { type CompleteRow, type Fused, type FusionWeights } from 'src/modules/search/fusion.js';

/**
 * A ranked chunk as the API shows it: the chunk, its score, the document it comes from and where in
 * it, all from the row the search read with the chunk; with `explain`, what its score was formed
 * from (`fusion`: the weights of a hybrid search's two legs, and where they come from).
 */
export function toResult(
  entry: Fused & { row: CompleteRow },
  { explain, fusion }: { explain: boolean; fusion?: { weights: FusionWeights; source: WeightsSource } },
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
  if (fusion) {
    result.fusion_score = round(entry.fusion);
    result.fusion_weights = {
      keyword: round(fusion.weights.keyword),
      semantic: round(fusion.weights.semantic),
    };
    result.fusion_weights_source = fusion.source;
  }
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
