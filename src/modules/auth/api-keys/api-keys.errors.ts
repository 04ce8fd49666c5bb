import { AppError } from 'src/common/errors/app-error.js';

export const ApiKeyErrors = {
  notFound: (keyId: string) =>
    new AppError(404, 'api_key_not_found', `No active API key ${keyId}`, { key_id: keyId }),
};
