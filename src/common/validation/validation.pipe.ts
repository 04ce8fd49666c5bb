import { type ArgumentMetadata, Injectable, ValidationPipe } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { getMetadataStorage, type ValidationError } from 'class-validator';
import { AppError, CommonErrors, type FieldIssue, listedIssues } from 'src/common/errors/app-error.js';
import { RESERVED_KEYS, reservedKeyPath, textIssueIn } from 'src/common/validation/json-value.js';
import { isPlainObject } from 'src/common/validation/metadata.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';

/**
 * Flattens class-validator's tree into `field: issue` pairs, with dotted paths for nested fields and
 * an array's items by their index (`queries[2].query`), as the other checks of a body name them.
 */
export function fieldIssues(errors: ValidationError[], parent = '', inArray = false): CodedIssue[] {
  return errors.flatMap((error) => {
    const field = inArray
      ? `${parent}[${error.property}]`
      : parent
        ? `${parent}.${error.property}`
        : error.property;
    // A field that is missing fails its first rule, whose message (about a length, say) would not say so.
    const missing = error.value === undefined;
    const own = Object.entries(error.constraints ?? {}).map(([constraint, message]) => ({
      field,
      issue:
        constraint === 'whitelistValidation' ? 'is not a known field' : missing ? 'is required' : message,
      code: (error.contexts?.[constraint] as { code?: ErrorCode } | undefined)?.code,
    }));
    return [...own, ...fieldIssues(error.children ?? [], field, Array.isArray(error.value))];
  });
}

/**
 * Keeps a free-form JSON field (metadata, filters) exactly as the client sent it. When class-transformer
 * copies a plain object it leaves out keys named like a member of `Object.prototype` (`toString`,
 * `valueOf`, ...): a filter on such a field would silently be no filter, and such metadata keys would
 * be lost.
 */
export const AsSent = (): PropertyDecorator => (target, property) => {
  Transform(({ obj, key }: { obj: Record<string, unknown>; key: string }) => obj[key])(target, property);
  Reflect.defineMetadata(AS_SENT, true, target, property);
};

/**
 * Marks a free-form JSON field (`AsSent`), whose own rule checks every key and value it holds
 * (`jsonValueIssue`) and names the error after the field (invalid_metadata, invalid_filter).
 */
const AS_SENT = 'validation:as_sent';

function isAsSent(dto: { prototype: object }, property: string): boolean {
  return Reflect.getMetadata(AS_SENT, dto.prototype, property) === true;
}

/** Keys of a DTO's input that class-transformer would leave out (see `AsSent`). */
function droppedKeys(value: object, metatype: { prototype: unknown }): string[] {
  return Object.keys(value).filter((key) => key in (metatype.prototype as object));
}

/**
 * Validates bodies, queries and params against their DTO classes. Unknown fields are refused. A rule
 * that names its own error code (`context: { code }`, e.g. invalid_name, invalid_metadata) decides the
 * code of the whole error; otherwise it is validation_error. `details` names each field and issue.
 */
@Injectable()
export class AppValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      stopAtFirstError: true,
      // The value is kept to tell a missing field from a wrong one; it is never shown to the client.
      validationError: { target: false, value: true },
      exceptionFactory: (errors: ValidationError[]) => new FieldIssuesError(fieldIssues(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const dto = metadata.metatype && !isBuiltin(metadata.metatype) ? metadata.metatype : undefined;
    if (metadata.type === 'body' && dto) {
      // A POST or PATCH without a body is validated as an empty object, so that it gets field errors.
      if (value === undefined) value = {};
      if (!isPlainObject(value)) {
        throw CommonErrors.validation([{ field: 'body', issue: 'must be a JSON object' }]);
      }
    }
    if (metadata.type === 'body' || metadata.type === 'query') refuseUnstorableText(value, metadata, dto);
    const keyIssues =
      (metadata.type === 'body' || metadata.type === 'query') && dto && isPlainObject(value)
        ? unacceptedKeys(value, dto)
        : [];
    if (keyIssues.length === 0) return super.transform(value, metadata);
    // The other fields are validated too, so that the error names every issue and a field's own
    // code (invalid_name) decides it as it would without these keys.
    try {
      await super.transform(value, metadata);
    } catch (error) {
      if (error instanceof FieldIssuesError) throw toAppError([...error.issues, ...keyIssues]);
      throw error;
    }
    throw toAppError(keyIssues);
  }
}

/**
 * Refuses a string PostgreSQL could not store as sent (`textIssueIn`), wherever it is in a body or a
 * query string, DTO or not: this is the one check of the kind for every route (the MCP endpoint,
 * which reads its messages itself, calls `textIssueIn` too). A DTO's field that names its own error
 * code (invalid_name) answers with it; free-form JSON fields (`AsSent`) are left to their own rules,
 * which apply the same check and name their own code. Path parameters are ids, each checked against
 * its pattern before any statement: one that holds such text names nothing, and is not found.
 */
function refuseUnstorableText(value: unknown, metadata: ArgumentMetadata, dto?: { prototype: object }): void {
  if (dto && isPlainObject(value)) {
    for (const [property, child] of Object.entries(value)) {
      if (isAsSent(dto, property)) continue;
      const found = textIssueIn({ [property]: child });
      if (found) throw toAppError([{ ...found, code: fieldCode(dto, property) }]);
    }
    return;
  }
  const found = textIssueIn(value, metadata.data ?? '');
  if (found) throw toAppError([{ ...found, field: found.field || metadata.type }]);
}

/**
 * Keys that would not reach validation: reserved names, which Nest deletes wherever they are (see
 * RESERVED_KEYS), and names of the DTO's prototype members, which class-transformer leaves out (see
 * `AsSent`). Without this check they would be ignored rather than refused.
 */
function unacceptedKeys(value: Record<string, unknown>, dto: { prototype: unknown }): CodedIssue[] {
  const issues: CodedIssue[] = [];
  const reserved = reservedKeyPath(value);
  if (reserved) {
    const issue = `is a reserved name: ${[...RESERVED_KEYS].join(', ')} are refused as keys`;
    issues.push({ field: reserved, issue, code: fieldCode(dto, reserved.split(/[.[]/)[0]) });
  }
  for (const field of droppedKeys(value, dto)) {
    if (field !== reserved) issues.push({ field, issue: 'is not a known field' });
  }
  return issues;
}

/** The error code a DTO's field declares for its own rules (`context: { code }`), if any. */
function fieldCode(dto: object, property: string): ErrorCode | undefined {
  for (const rule of getMetadataStorage().getTargetValidationMetadatas(dto as () => void, '', true, false)) {
    const code =
      rule.propertyName === property ? (rule.context as { code?: ErrorCode } | undefined)?.code : undefined;
    if (code) return code;
  }
  return undefined;
}

function isBuiltin(type: unknown): boolean {
  return [String, Boolean, Number, Array, Object].includes(type as never);
}

type CodedIssue = FieldIssue & { code?: ErrorCode };

/** The error of a failed validation, which keeps each issue's own code until all are known. */
class FieldIssuesError extends AppError {
  constructor(readonly issues: CodedIssue[]) {
    const error = toAppError(issues);
    super(error.status, error.code, error.message, error.details);
  }
}

function toAppError(issues: CodedIssue[]): AppError {
  const plain = ({ field, issue }: CodedIssue): FieldIssue => ({ field, issue });
  const coded = issues.find((issue) => issue.code);
  if (!coded?.code) return CommonErrors.validation(issues.map(plain));
  // The issue that names the error comes first, so that the list never leaves it out.
  const errors = [coded, ...issues.filter((issue) => issue !== coded)].map(plain);
  return new AppError(400, coded.code, `Invalid ${coded.field}: ${coded.issue}`, {
    field: coded.field,
    issue: coded.issue,
    ...listedIssues(errors),
  });
}
