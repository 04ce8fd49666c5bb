import { codePointCount, jsonValueIssue, stringIssue } from 'src/common/validation/json-value.js';
import { isPlainObject, METADATA_LIMITS } from 'src/common/validation/metadata.js';
import { SEARCH_LIMITS, SearchErrors } from 'src/modules/search/search.errors.js';
import type { DocumentCondition } from 'src/modules/chunk-index/chunk-reads.repository.js';

/**
 * Metadata filters: parsed once per request into a tree (`parseFilters`, which refuses anything
 * malformed), then rendered into each statement that needs them as a SQL condition on `d.metadata` (the
 * document's metadata), numbered from that statement's first free parameter (`renderFilter`). Every
 * value is a bound parameter: nothing from a filter is ever spliced into SQL text, field names included.
 *
 * `{"category": "guide"}` is equality; an array field (such as `tags`) matches when it contains the
 * value; a dotted name (`author.name`) also reaches into nested objects (see `paths`). Per field, an
 * object of operators: `$eq $ne $gt $gte $lt $lte $in $nin $exists`; and `$and` / `$or` over lists of
 * filters. Comparisons order numbers as numbers and strings as strings (ISO dates compare correctly);
 * a value of another type does not match.
 */
export type FilterValue = string | number | boolean;

/** A parsed filter's conditions. */
export type FilterNode =
  | { kind: 'true' }
  | { kind: 'and' | 'or'; nodes: FilterNode[] }
  | { kind: 'not'; node: FilterNode }
  /** The field equals the value, or is an array that contains it. */
  | { kind: 'equals'; field: string; value: FilterValue }
  /** The field equals one of the values, as `equals` has it. */
  | { kind: 'in'; field: string; values: FilterValue[] }
  | { kind: 'exists'; field: string }
  | { kind: 'compare'; field: string; operator: Comparison; value: string | number };

type Comparison = (typeof COMPARISONS)[keyof typeof COMPARISONS];

/** A request's filters, checked: its conditions (null: no filter) and how many fields they name. */
export interface ParsedFilter {
  root: FilterNode | null;
  fields: number;
}

export const NO_FILTER: ParsedFilter = { root: null, fields: 0 };

/** A filter as SQL, for a statement whose parameters from `firstParam` on are the filter's. */
export interface RenderedFilter {
  /** A boolean SQL expression over `d.metadata`; `TRUE` when there is no filter. */
  sql: string;
  params: unknown[];
}

const COMPARISONS = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const;
const OPERATORS = ['$eq', '$ne', '$in', '$nin', '$exists', ...Object.keys(COMPARISONS)];
/**
 * How deep `$and` / `$or` may nest: with at most 10 fields, deeper nesting can always be written
 * shallower. (The body's own depth limit, `MAX_BODY_DEPTH`, keeps any filter from nesting deep enough
 * to overflow the parser's stack.)
 */
export const MAX_FILTER_NESTING = 10;

/** Parses `filters` as sent; 400 for anything malformed. */
export function parseFilters(filters: unknown): ParsedFilter {
  if (filters === undefined || filters === null) return NO_FILTER;
  const parser = new FilterParser();
  const root = parser.parse(filters);
  if (parser.fields > SEARCH_LIMITS.filterFields) throw SearchErrors.tooManyFilters(parser.fields);
  return { root, fields: parser.fields };
}

/** The filter as the index's reads take it: a condition on the chunks' document (`d`). */
export function documentCondition(filter: ParsedFilter): DocumentCondition {
  return (firstParam) => renderFilter(filter, firstParam);
}

/** The filter as SQL, its parameters numbered from `firstParam`. */
export function renderFilter(filter: ParsedFilter, firstParam: number): RenderedFilter {
  if (filter.root === null) return { sql: 'TRUE', params: [] };
  const renderer = new FilterRenderer(firstParam);
  return { sql: renderer.render(filter.root), params: renderer.params };
}

class FilterParser {
  fields = 0;

  parse(filter: unknown, path = 'filters', nesting = 0): FilterNode {
    if (!isPlainObject(filter)) throw SearchErrors.invalidFilter(path, 'must be an object');
    const nodes = Object.entries(filter).map(([key, condition]) => {
      if (key === '$and' || key === '$or') return this.logical(key, condition, nesting + 1);
      if (key.startsWith('$')) throw SearchErrors.invalidFilter(key, 'unknown operator');
      const issue = stringIssue(key) ?? (namesMetadata(key) ? null : NAME_ISSUE);
      if (issue) throw SearchErrors.invalidFilter('filters', `field names ${issue}`);
      this.fields++;
      return this.field(key, condition);
    });
    return nodes.length === 0 ? { kind: 'true' } : { kind: 'and', nodes };
  }

  private logical(operator: '$and' | '$or', conditions: unknown, nesting: number): FilterNode {
    if (!Array.isArray(conditions) || conditions.length === 0) {
      throw SearchErrors.invalidFilter(operator, 'must be a non-empty array of filters');
    }
    if (nesting > MAX_FILTER_NESTING) {
      throw SearchErrors.invalidFilter(operator, `$and and $or nest at most ${MAX_FILTER_NESTING} deep`);
    }
    const nodes = conditions.map((condition, i) => this.parse(condition, `${operator}[${i}]`, nesting));
    return { kind: operator === '$and' ? 'and' : 'or', nodes };
  }

  private field(field: string, condition: unknown): FilterNode {
    if (!isPlainObject(condition)) return { kind: 'equals', field, value: scalar(field, condition) };
    const nodes = Object.entries(condition).map(([operator, value]): FilterNode => {
      switch (operator) {
        case '$eq':
          return { kind: 'equals', field, value: scalar(field, value) };
        case '$ne':
          return { kind: 'not', node: { kind: 'equals', field, value: scalar(field, value) } };
        case '$in':
          return { kind: 'in', field, values: list(field, operator, value) };
        case '$nin':
          return { kind: 'not', node: { kind: 'in', field, values: list(field, operator, value) } };
        case '$exists':
          if (typeof value !== 'boolean')
            throw SearchErrors.invalidFilter(field, '$exists takes true or false');
          return value ? { kind: 'exists', field } : { kind: 'not', node: { kind: 'exists', field } };
        case '$gt':
        case '$gte':
        case '$lt':
        case '$lte':
          if (typeof value !== 'number' && typeof value !== 'string')
            throw SearchErrors.invalidFilter(field, 'comparisons take a number or a string');
          return { kind: 'compare', field, operator: COMPARISONS[operator], value: checkValue(field, value) };
        default:
          throw SearchErrors.invalidFilter(field, operatorHint(field, operator));
      }
    });
    if (nodes.length === 0)
      throw SearchErrors.invalidFilter(field, 'an operator object needs at least one operator');
    return { kind: 'and', nodes };
  }
}

class FilterRenderer {
  readonly params: unknown[] = [];

  constructor(private readonly firstParam: number) {}

  private bind(value: unknown): string {
    this.params.push(value);
    return `$${this.firstParam + this.params.length - 1}`;
  }

  render(node: FilterNode): string {
    switch (node.kind) {
      case 'true':
        return 'TRUE';
      case 'and':
      case 'or':
        return `(${node.nodes.map((inner) => this.render(inner)).join(node.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `NOT ${this.render(node.node)}`;
      case 'equals':
        return this.equals(node.field, node.value);
      case 'in':
        return this.equalsAny(node.field, node.values);
      case 'exists':
        return this.exists(node.field);
      case 'compare':
        return this.compare(node.field, node.operator, node.value);
    }
  }

  /**
   * The field equals the value, or is an array that contains it, at any of its paths; every form is a
   * containment, which the GIN index serves.
   */
  private equals(field: string, value: FilterValue): string {
    const forms = containments(field, value);
    return `(${forms.map((form) => `d.metadata @> ${this.bind(form)}::jsonb`).join(' OR ')})`;
  }

  /**
   * The field equals one of the values, as `equals` has it (the value itself, or an array holding it
   * among its elements), tested on the value at each of its paths against one bound array, which
   * PostgreSQL hashes: one lookup a row, not a clause per value and form (a list of 100 values on a
   * dotted name would be 400 containments). Not `d.metadata @> ANY (forms)`: a bitmap scan of the GIN
   * index walks every combination of the arrays of such conditions, and two lists make that a hundred
   * thousand index searches.
   */
  private equalsAny(field: string, values: FilterValue[]): string {
    const bound = `${this.bind(values.map((value) => JSON.stringify(value)))}::jsonb[]`;
    return this.anyValue(field, (json) => `${json} = ANY (${bound})`);
  }

  /** The field is present at any of its paths. */
  private exists(field: string): string {
    const tests = paths(field).map((path) =>
      path.length === 1 ? `d.metadata ? ${this.bind(path[0])}` : `${this.at(path)} IS NOT NULL`,
    );
    return `(${tests.join(' OR ')})`;
  }

  /**
   * The metadata's value at `path`, or NULL. Every step is an object's key, never an array's index
   * (`tags.0` finds nothing in `["x"]`), as in the containment `equals` uses.
   */
  private at(path: string[]): string {
    return `(${path.reduce((json, step) => `${json} -> ${this.bind(step)}::text`, 'd.metadata')})`;
  }

  /**
   * The field compares as asked, or is an array with an element that does (as equality matches an
   * array that contains the value). Numbers compare with numbers, strings with strings (bytewise, so ISO
   * dates order correctly); a value of another type never matches.
   */
  private compare(field: string, operator: Comparison, value: string | number): string {
    const bound = this.bind(value);
    // CASE, not AND: PostgreSQL may evaluate AND's operands in any order, and the cast fails on text.
    const holds = (json: string) =>
      typeof value === 'number'
        ? `CASE WHEN jsonb_typeof(${json}) = 'number' THEN (${json} #>> '{}')::numeric ${operator} ${bound}::numeric ELSE false END`
        : `(jsonb_typeof(${json}) = 'string' AND (${json} #>> '{}') ${operator} ${bound}::text COLLATE "C")`;
    return this.anyValue(field, holds);
  }

  /**
   * `holds` of the field's value at any of its paths, or of an element of that value when it is an
   * array (as equality matches an array that contains the value). False where the field is missing,
   * never NULL, so that a negation (`$nin`) matches a document without the field.
   */
  private anyValue(field: string, holds: (json: string) => string): string {
    const tests = paths(field).map((path) => {
      const value = this.at(path);
      return (
        `COALESCE(CASE WHEN jsonb_typeof(${value}) = 'array' ` +
        `THEN EXISTS (SELECT FROM jsonb_array_elements(${value}) AS element WHERE ${holds('element')}) ` +
        `ELSE ${holds(value)} END, false)`
      );
    });
    return `(${tests.join(' OR ')})`;
  }
}

/** What to say of a key in a field's operator object that is not an operator. */
function operatorHint(field: string, key: string): string {
  if (key.startsWith('$')) return `unknown operator "${key}"; use one of ${OPERATORS.join(' ')}`;
  if (OPERATORS.includes(`$${key}`)) return `"${key}" is not an operator; did you mean "$${key}"?`;
  return `"${key}" is not an operator (one of ${OPERATORS.join(' ')}); a nested field is named with dots: "${field}.${key}"`;
}

/**
 * Where a field name points in the metadata: the top-level key of that name and, for a dotted name,
 * the nested path its dots spell as well (`author.name`: the key `name` of the object under `author`),
 * as Elasticsearch and MongoDB read dotted names; a top-level key whose name holds dots still matches.
 * A path that is longer than metadata can nest, or has an empty step (`a..b`), is the key alone.
 */
function paths(field: string): string[][] {
  const steps = field.split('.');
  const nestable = steps.length > 1 && steps.length <= METADATA_LIMITS.maxDepth && !steps.includes('');
  return nestable ? [[field], steps] : [[field]];
}

/**
 * What metadata that holds `value` in `field` contains, as JSON: at each of the field's paths, the
 * value itself or an array holding it (`{"a": {"b": value}}`, `{"a": {"b": [value]}}`).
 */
function containments(field: string, value: FilterValue): string[] {
  return paths(field).flatMap((path) =>
    [nested(path, value), nested(path, [value])].map((form) => JSON.stringify(form)),
  );
}

const NAME_ISSUE = `must be 1-${METADATA_LIMITS.maxKeyLength} characters (each part of a dotted name)`;

/**
 * Whether `field` can name anything in metadata, whose keys are 1-256 characters: the key itself, or
 * the nested path of a dotted name. Any other name could never match, and is refused rather than
 * answered with no results.
 */
function namesMetadata(field: string): boolean {
  const keyLength = (key: string) => key.length > 0 && codePointCount(key) <= METADATA_LIMITS.maxKeyLength;
  return paths(field).some((path) => path.every(keyLength));
}

/** `value` under the path, as a JSON object to test containment with: `{"a": {"b": value}}`. */
function nested(path: string[], value: unknown): unknown {
  return path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
}

/**
 * A value to compare with. Not null: metadata holds no null value (a PATCH setting a key to null
 * removes it), so `{"field": null}` could never match; `$exists` asks whether a field is there.
 */
function scalar(field: string, value: unknown): FilterValue {
  if (typeof value === 'string' || typeof value === 'number') return checkValue(field, value);
  if (typeof value === 'boolean') return value;
  throw SearchErrors.invalidFilter(
    field,
    'values must be strings, numbers or booleans ($exists tests whether a field is present)',
  );
}

/** Refuses what metadata could never hold either (`jsonValueIssue`): U+0000, lone surrogates, ±Infinity. */
function checkValue<T extends string | number>(field: string, value: T): T {
  const issue = jsonValueIssue(value);
  if (issue) throw SearchErrors.invalidFilter(field, `values ${issue}`);
  return value;
}

/** Longest $in / $nin list. */
const MAX_LIST = 100;

function list(field: string, operator: string, value: unknown): FilterValue[] {
  if (!Array.isArray(value) || value.length === 0)
    throw SearchErrors.invalidFilter(field, `${operator} takes a non-empty array`);
  if (value.length > MAX_LIST)
    throw SearchErrors.invalidFilter(field, `${operator} takes at most ${MAX_LIST} values`);
  return value.map((item) => scalar(field, item));
}
