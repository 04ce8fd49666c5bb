/** The archive format's name and version (docs/export-format.md); a reader takes this version alone. */
export const ARCHIVE_FORMAT = 'dss-dataset-archive';
export const ARCHIVE_VERSION = 1;
