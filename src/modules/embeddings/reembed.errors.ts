import { AppError } from 'src/common/errors/app-error.js';

export const ReembedErrors = {
  inProgress: (datasetId: string) =>
    new AppError(
      409,
      'reembed_in_progress',
      `Dataset "${datasetId}" is already being re-embedded (to another model, or by another run); cancel that first`,
      { dataset_id: datasetId },
    ),
  keywordOnly: () =>
    new AppError(
      400,
      'semantic_unavailable',
      'The service runs keyword-only (no embedding provider): there is no model to re-embed with',
    ),
  /** Why a run stopped: its lock lost, or its generation cancelled meanwhile. */
  stopped: (datasetId: string, why: 'lost' | 'refused') =>
    why === 'lost'
      ? new AppError(
          409,
          'reembed_lock_lost',
          `The re-embedding of dataset "${datasetId}" lost its lock (its database session ended) and wrote nothing more; run it again`,
          { dataset_id: datasetId },
        )
      : new AppError(
          409,
          'reembed_cancelled',
          `The re-embedding of dataset "${datasetId}" was cancelled while it ran; nothing more was written`,
          { dataset_id: datasetId },
        ),
};
