import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IdempotencyInterceptor } from 'src/common/idempotency/idempotency.interceptor.js';
import { IDEMPOTENT_REPLAY, IDEMPOTENT_STREAMED_BODY } from 'src/common/idempotency/idempotent-replays.js';

/**
 * Marks a creating POST as accepting `Idempotency-Key`; `replay` names the check a stored response
 * passes before it is replayed (`IdempotentReplays`); `streamedBodyBytes` marks a route that reads its
 * body as it arrives, up to that many bytes. The header has no example value: Swagger UI would fill it
 * in, and every "Try it out" after the first would replay the first request.
 */
export function Idempotent(options: { replay?: string; streamedBodyBytes?: number } = {}) {
  return applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    SetMetadata(IDEMPOTENT_REPLAY, options.replay),
    SetMetadata(IDEMPOTENT_STREAMED_BODY, options.streamedBodyBytes),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'Up to 255 visible ASCII characters, without spaces. Repeating a key with the same request within 24 h returns the ' +
        'first response (with header Idempotent-Replayed: true) and creates nothing; with a different request, 422. ' +
        'Use a new random value, such as a UUID, for each new request.',
      schema: {
        type: 'string',
        minLength: 1,
        maxLength: 255,
        pattern: '^[!-~]+$',
      },
    }),
  );
}
