import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IdempotencyInterceptor } from 'src/common/idempotency/idempotency.interceptor.js';

/** Marks a creating POST as accepting `Idempotency-Key`. */
export function Idempotent() {
  return applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'Up to 255 visible ASCII characters, without spaces. Repeating a key with the same request within 24 h returns the ' +
        'first response (with header Idempotent-Replayed: true) and creates nothing; with a different request, 422.',
      schema: {
        type: 'string',
        minLength: 1,
        maxLength: 255,
        pattern: '^[!-~]+$',
        example: '5f0c7a5e-6c2b-4c53-9f6e-9d1f6b1d2a10',
      },
    }),
  );
}
