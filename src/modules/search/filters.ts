import { codePointCount, jsonValueIssue, stringIssue } from 'src/common/validation/json-value.js';
import { isPlainObject, METADATA_LIMITS } from 'src/common/validation/metadata.js';
import { SEARCH_LIMITS, SearchErrors } from 'src/modules/search/search.errors.js';

/**
 * Metadata filters, compiled to a SQL condition on `d.metadata` (the document's metadata) whose values
 * are all bound parameters: nothing from a filter is ever spliced into SQL text, field names included.
 *
 * `{"category": "guide"}` is equality; an array field (such as `tags`) matches when it contains the
 * value; a dotted name (`author.name`) also reaches into nested objects (see `paths`). Per field, an
 * object of operators: `$eq $ne $gt $gte $lt $lte $in $nin $exists`; and `$and` / `$or` over lists of
 * filters. Comparisons order numbers as numbers and strings as strings (ISO dates compare correctly);
 * a value of another type does not match.
 */
export type FilterValue = string | number | boolean;

export interface CompiledFilter {
  /** A boolean SQL expression over `d.metadata`; `TRUE` when there is no filter. */
  sql: string;
  params: unknown[];
  fields: number;
}

const COMPARISONS = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const;
const OPERATORS = ['$eq', '$ne', '$in', '$nin', '$exists', ...Object.keys(COMPARISONS)];
/**
 * How deep `$and` / `$or` may nest: with at most 10 fields, deeper nesting can always be written
 * shallower. (The body's own depth limit, `MAX_BODY_DEPTH`, keeps any filter from nesting deep enough
 * to overflow the compiler's stack.)
 */
export const MAX_FILTER_NESTING = 10;

class FilterCompiler {
  readonly params: unknown[] = [];
  fields = 0;

  constructor(private readonly firstParam: number) {}

  private bind(value: unknown): string {
    this.params.push(value);
    return `$${this.firstParam + this.params.length - 1}`;
  }

  compile(filter: unknown, path = 'filters', nesting = 0): string {
    if (!isPlainObject(filter)) throw SearchErrors.invalidFilter(path, 'must be an object');
    const parts = Object.entries(filter).map(([key, condition]) => {
      if (key === '$and' || key === '$or') return this.logical(key, condition, nesting + 1);
      if (key.startsWith('$')) throw SearchErrors.invalidFilter(key, 'unknown operator');
      const issue = stringIssue(key) ?? (namesMetadata(key) ? null : NAME_ISSUE);
      if (issue) throw SearchErrors.invalidFilter('filters', `field names ${issue}`);
      this.fields++;
      return this.field(key, condition);
    });
    return parts.length === 0 ? 'TRUE' : `(${parts.join(' AND ')})`;
  }

  private logical(operator: '$and' | '$or', conditions: unknown, nesting: number): string {
    if (!Array.isArray(conditions) || conditions.length === 0) {
      throw SearchErrors.invalidFilter(operator, 'must be a non-empty array of filters');
    }
    if (nesting > MAX_FILTER_NESTING) {
      throw SearchErrors.invalidFilter(operator, `$and and $or nest at most ${MAX_FILTER_NESTING} deep`);
    }
    const parts = conditions.map((condition, i) => this.compile(condition, `${operator}[${i}]`, nesting));
    return `(${parts.join(operator === '$and' ? ' AND ' : ' OR ')})`;
  }

  private field(field: string, condition: unknown): string {
    if (!isPlainObject(condition)) return this.equals(field, scalar(field, condition));
    const parts = Object.entries(condition).map(([operator, value]) => {
      switch (operator) {
        case '$eq':
          return this.equals(field, scalar(field, value));
        case '$ne':
          return `NOT ${this.equals(field, scalar(field, value))}`;
        case '$in':
          return this.equalsAny(field, list(field, operator, value));
        case '$nin':
          return `NOT ${this.equalsAny(field, list(field, operator, value))}`;
        case '$exists':
          if (typeof value !== 'boolean')
            throw SearchErrors.invalidFilter(field, '$exists takes true or false');
          return `${value ? '' : 'NOT '}${this.exists(field)}`;
        case '$gt':
        case '$gte':
        case '$lt':
        case '$lte':
          return this.compare(field, COMPARISONS[operator], value);
        default:
          throw SearchErrors.invalidFilter(field, operatorHint(field, operator));
      }
    });
    if (parts.length === 0)
      throw SearchErrors.invalidFilter(field, 'an operator object needs at least one operator');
    return `(${parts.join(' AND ')})`;
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
   * PostgreSQL hashes: one lookup a row, not a clause per value and form. A list of 100 values on a
   * dotted name was 400 containments; the largest filter the limits allow, 8,420 parameters and 288 KB
   * of SQL. Not `d.metadata @> ANY (forms)`: a bitmap scan of the GIN index walks every combination of
   * the arrays of such conditions, and two lists made that a hundred thousand index searches.
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
  private compare(field: string, operator: string, value: unknown): string {
    if (typeof value !== 'number' && typeof value !== 'string')
      throw SearchErrors.invalidFilter(field, 'comparisons take a number or a string');
    const bound = this.bind(checkValue(field, value));
    const type = typeof value === 'number' ? 'number' : 'string';
    // CASE, not AND: PostgreSQL may evaluate AND's operands in any order, and the cast fails on text.
    const holds = (json: string) =>
      type === 'number'
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

/** Compiles `filters` with parameters numbered from `firstParam`; 400 for anything malformed. */
export function compileFilters(filters: unknown, firstParam: number): CompiledFilter {
  if (filters === undefined || filters === null) return { sql: 'TRUE', params: [], fields: 0 };
  const compiler = new FilterCompiler(firstParam);
  const sql = compiler.compile(filters);
  if (compiler.fields > SEARCH_LIMITS.filterFields) throw SearchErrors.tooManyFilters(compiler.fields);
  return { sql, params: compiler.params, fields: compiler.fields };
}
