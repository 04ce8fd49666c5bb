import { AppError } from 'src/common/errors/app-error.js';
import { ARCHIVE_FORMAT, ARCHIVE_VERSION } from 'src/modules/transfer/archive-version.js';

/** Where in an archive a refusal was found: its record (line of the decompressed NDJSON), and more. */
export type ArchivePlace = { record?: number } & Record<string, unknown>;

/**
 * Why an archive was refused on import (docs/export-format.md). Each is a 4xx, and nothing of the
 * archive is kept: the import writes in one transaction, rolled back at the first refusal.
 */
export const TransferErrors = {
  versionUnsupported: (format: unknown, version: unknown, place: ArchivePlace) =>
    new AppError(
      400,
      'archive_version_unsupported',
      `This service imports archives of format "${ARCHIVE_FORMAT}" version ${ARCHIVE_VERSION}`,
      { ...place, format: format ?? null, version: version ?? null, supported: [ARCHIVE_VERSION] },
    ),
  corrupt: (reason: string, place: ArchivePlace = {}) =>
    new AppError(400, 'archive_corrupt', `The archive is not a valid dataset archive: ${reason}`, {
      ...place,
      reason,
    }),
  truncated: (reason: string, place: ArchivePlace = {}) =>
    new AppError(400, 'archive_truncated', `The archive ends early: ${reason}`, { ...place, reason }),
  sizeMismatch: (declared: number, actual: number, place: ArchivePlace) =>
    new AppError(
      400,
      'archive_size_mismatch',
      `An entry holds ${actual} bytes where its header says ${declared}, or its digest differs`,
      { ...place, declared_bytes: declared, actual_bytes: actual },
    ),
  unsafePath: (filename: string, place: ArchivePlace) =>
    new AppError(
      400,
      'archive_unsafe_path',
      'A file name points outside the archive (absolute, or with "..")',
      {
        ...place,
        filename,
      },
    ),
  invalidVector: (reason: string, place: ArchivePlace) =>
    new AppError(400, 'archive_invalid_vector', `A chunk's vector is not usable: ${reason}`, {
      ...place,
      reason,
    }),
  duplicateId: (id: string, place: ArchivePlace) =>
    new AppError(400, 'archive_duplicate_id', `The archive holds "${id}" twice`, { ...place, id }),
  unknownDocument: (documentId: string, place: ArchivePlace) =>
    new AppError(
      400,
      'archive_unknown_document',
      `A chunk belongs to "${documentId}", which is not the document it follows`,
      { ...place, document_id: documentId },
    ),
  /** A limit an upload or a dataset would break (`limit` names it), or an upload's own refusal (`cause`). */
  overLimits: (limit: string, message: string, place: ArchivePlace) =>
    new AppError(422, 'archive_over_limits', `The archive breaks the service's limits: ${message}`, {
      ...place,
      limit,
    }),
};
