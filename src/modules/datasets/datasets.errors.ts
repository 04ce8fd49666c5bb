import { AppError } from 'src/common/errors/app-error.js';
import { shownId } from 'src/common/ids/ids.js';

export const DATASETS_PER_ACCOUNT = 1_000;

export const DatasetErrors = {
  notFound: (datasetId: string) =>
    new AppError(404, 'dataset_not_found', `Dataset "${shownId(datasetId)}" not found`, {
      dataset_id: shownId(datasetId),
    }),
  nameConflict: (name: string) =>
    new AppError(409, 'dataset_name_conflict', `A dataset named "${name}" already exists in this account`, {
      field: 'name',
      name,
    }),
  limitReached: () =>
    new AppError(
      422,
      'dataset_limit_reached',
      `An account can hold at most ${DATASETS_PER_ACCOUNT} datasets; delete one to create another`,
      { limit: DATASETS_PER_ACCOUNT },
    ),
  grantRestricted: () =>
    new AppError(
      403,
      'grant_restricted',
      'This token was granted for chosen datasets only; it cannot create datasets',
    ),
  notOwner: (datasetId: string) =>
    new AppError(
      403,
      'forbidden',
      `Dataset "${datasetId}" is public but belongs to another account: it is read-only`,
      {
        dataset_id: datasetId,
      },
    ),
};
