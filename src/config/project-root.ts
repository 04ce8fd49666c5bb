import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root, from `src/config` (tests) or `dist/config` (built) alike. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
