import { AppError } from 'src/common/errors/app-error.js';
import { EVALUATION_LIMITS } from 'src/modules/search/dto/evaluation.dto.js';

export const EvaluationErrors = {
  /** The batch's code: a page of judged queries is bounded as a batch of queries is. */
  tooManyQueries: (count: number) =>
    new AppError(
      400,
      'too_many_queries',
      `An evaluation may hold at most ${EVALUATION_LIMITS.queries} judged queries; send larger sets in pages`,
      { field: 'queries', count, limit: EVALUATION_LIMITS.queries },
    ),
};
