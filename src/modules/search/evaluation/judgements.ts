import { AppError, CommonErrors, type FieldIssue } from 'src/common/errors/app-error.js';
import { EVALUATION_LIMITS, type JudgedQueryDto } from 'src/modules/search/dto/evaluation.dto.js';
import type { Judgements } from 'src/modules/search/evaluation/metrics.js';
import { type ParsedFilter, parseFilters } from 'src/modules/search/filters.js';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';

/** A judged document as the request names it, checked: by its id, or by a condition on metadata. */
export type JudgedItem = { field: string; grade: number } & (
  { documentId: string } | { condition: ParsedFilter }
);

/**
 * Each query's judged documents, checked before any work is done: each names documents by
 * `document_id` or by `metadata`, not both; metadata by equal values on at most as many fields as a
 * filter names, matched as the filter `{"field": value}` matches (`parseFilters`). Every issue is
 * listed in one 400 validation_error, by the query's and the item's place.
 */
export function judgedItems(queries: JudgedQueryDto[]): JudgedItem[][] {
  const issues: FieldIssue[] = [];
  const items = queries.map((query, i) =>
    query.relevant.flatMap((item, j): JudgedItem[] => {
      const field = `queries[${i}].relevant[${j}]`;
      if ((item.document_id === undefined) === (item.metadata === undefined)) {
        issues.push({ field, issue: 'must name documents by document_id or by metadata, one of the two' });
        return [];
      }
      if (item.document_id !== undefined) {
        return [{ field: `${field}.document_id`, grade: item.grade, documentId: item.document_id }];
      }
      const condition = metadataCondition(item.metadata!, `${field}.metadata`, issues);
      return condition ? [{ field: `${field}.metadata`, grade: item.grade, condition }] : [];
    }),
  );
  if (issues.length > 0) throw CommonErrors.validation(issues);
  return items;
}

/**
 * The filter a judged item's metadata stands for, or null with its issue noted: equality only, since
 * an item names the documents that hold given values, not a range of them.
 */
function metadataCondition(
  metadata: Record<string, unknown>,
  field: string,
  issues: FieldIssue[],
): ParsedFilter | null {
  const entries = Object.entries(metadata);
  const issue =
    entries.length === 0
      ? { field, issue: 'must name at least one metadata field' }
      : entries.length > SEARCH_LIMITS.filterFields
        ? { field, issue: `may name at most ${SEARCH_LIMITS.filterFields} fields` }
        : entries
            .map(([key, value]) =>
              key.startsWith('$')
                ? {
                    field: `${field}.${key}`,
                    issue: 'is an operator: name documents by equal values, {"field": value}',
                  }
                : ['string', 'number', 'boolean'].includes(typeof value)
                  ? null
                  : { field: `${field}.${key}`, issue: 'must be a string, a number or a boolean' },
            )
            .find((found) => found !== null);
  if (issue) {
    issues.push(issue);
    return null;
  }
  try {
    return parseFilters(metadata);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'invalid_filter') throw error;
    const { field: named, issue } = error.details as { field: string; issue: string };
    issues.push({ field: named === 'filters' ? field : `${field}.${named}`, issue });
    return null;
  }
}

/**
 * Each query's relevant documents with their grades, from the documents each item names (`named`):
 * a document named by several items takes the highest grade. 400 validation_error for an item that
 * names no document of the dataset, and for a query whose items name more documents than a query's
 * `relevant` may hold.
 */
export function relevantDocuments(
  items: JudgedItem[][],
  named: (item: JudgedItem) => readonly string[],
): Judgements[] {
  const issues: FieldIssue[] = [];
  const relevant = items.map((query, i) => {
    const grades = new Map<string, number>();
    for (const item of query) {
      const documents = named(item);
      if (documents.length === 0) {
        issues.push({
          field: item.field,
          issue:
            'documentId' in item ? 'names no document of the dataset' : 'matches no document of the dataset',
        });
      }
      for (const document of documents) grades.set(document, Math.max(grades.get(document) ?? 0, item.grade));
    }
    if (grades.size > EVALUATION_LIMITS.relevantPerQuery) {
      issues.push({
        field: `queries[${i}].relevant`,
        issue: `names more than ${EVALUATION_LIMITS.relevantPerQuery} documents`,
      });
    }
    return grades;
  });
  if (issues.length > 0) throw CommonErrors.validation(issues);
  return relevant;
}
