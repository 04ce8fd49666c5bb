import { type ArgumentMetadata, Injectable, ValidationPipe } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { AppError, CommonErrors, type FieldIssue } from 'src/common/errors/app-error.js';

/** Flattens class-validator's tree into `field: issue` pairs, with dotted paths for nested fields. */
export function fieldIssues(errors: ValidationError[], parent = ''): (FieldIssue & { code?: string })[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.entries(error.constraints ?? {}).map(([constraint, message]) => ({
      field,
      issue: constraint === 'whitelistValidation' ? 'is not a known field' : message,
      code: (error.contexts?.[constraint] as { code?: string } | undefined)?.code,
    }));
    return [...own, ...fieldIssues(error.children ?? [], field)];
  });
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
      validationError: { target: false, value: false },
      exceptionFactory: (errors: ValidationError[]) => toAppError(fieldIssues(errors)),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && metadata.metatype && !isBuiltin(metadata.metatype)) {
      // A POST or PATCH without a body is validated as an empty object, so that it gets field errors.
      if (value === undefined) value = {};
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw CommonErrors.validation([{ field: 'body', issue: 'must be a JSON object' }]);
      }
    }
    return super.transform(value, metadata);
  }
}

function isBuiltin(type: unknown): boolean {
  return [String, Boolean, Number, Array, Object].includes(type as never);
}

function toAppError(issues: (FieldIssue & { code?: string })[]): AppError {
  const errors = issues.map(({ field, issue }) => ({ field, issue }));
  const coded = issues.find((issue) => issue.code);
  if (!coded?.code) return CommonErrors.validation(errors);
  return new AppError(400, coded.code, `Invalid ${coded.field}: ${coded.issue}`, {
    field: coded.field,
    issue: coded.issue,
    errors,
  });
}
