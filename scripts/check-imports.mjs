// Checks the direction of imports (docs/architecture.md, Direction of imports) over every folder of
// src/: no cycle between files, no cycle between folders (each module of src/modules/ is one), each
// shared folder importing only those below it (config ← common ← database ← modules ← openapi, the
// root composing them all), and migrations importing from src/ only what the search index, the
// database layer and common/ hold. Part of `npm run lint`; prints each breach and exits 1.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm;
/** The modules a migration may import: they import no feature module themselves. */
const MIGRATIONS_MAY_IMPORT = ['src/modules/chunk-index/', 'src/database/', 'src/common/'];

function sources(dir) {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/** The project files `file` imports (`src/...` and relative paths), as paths from the root. */
function importsOf(file) {
  const targets = [];
  for (const [, from, bare] of readFileSync(join(root, file), 'utf8').matchAll(IMPORT)) {
    const spec = from ?? bare;
    let target;
    if (spec.startsWith('src/')) target = spec;
    else if (spec.startsWith('.')) target = normalize(join(dirname(file), spec));
    else continue;
    targets.push(target.replace(/\.js$/, '.ts'));
  }
  return targets;
}

/** Strongly connected components of more than one node (Tarjan). */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const state = new Map();
  const found = [];
  const visit = (node) => {
    const own = { index, low: index, onStack: true };
    index++;
    state.set(node, own);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      const seen = state.get(next);
      if (!seen) {
        visit(next);
        own.low = Math.min(own.low, state.get(next).low);
      } else if (seen.onStack) own.low = Math.min(own.low, seen.index);
    }
    if (own.low === own.index) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

const problems = [];
const files = new Map(sources('src').map((file) => [file, importsOf(file)]));
for (const cycle of cycles(files)) problems.push(`files import each other: ${cycle.join(' → ')}`);

/**
 * The folder a file belongs to: a module of src/modules (`modules/datasets`), one of src's shared
 * folders (`common`, `config`, `database`, `openapi`), or the composition at src's root (`root`:
 * app.module.ts, main.ts, cli.ts, app.factory.ts, configuration.ts), which alone may import everything.
 */
function folderOf(file) {
  const module = /^src\/modules\/([^/]+)\//.exec(file);
  if (module) return `modules/${module[1]}`;
  return /^src\/([^/]+)\//.exec(file)?.[1] ?? 'root';
}

/** What each folder may import besides itself: features → shared modules → database → common → config. */
function mayImport(from, to) {
  if (from === 'root' || from === to) return true;
  const below = {
    config: [],
    common: ['config'],
    database: ['config', 'common'],
    openapi: ['config', 'common', 'database'],
  };
  if (from.startsWith('modules/'))
    return to.startsWith('modules/') || ['config', 'common', 'database'].includes(to);
  if (from === 'openapi') return to.startsWith('modules/') || below.openapi.includes(to);
  return (below[from] ?? []).includes(to);
}

const folders = new Map();
for (const [file, targets] of files) {
  const from = folderOf(file);
  const edges = folders.get(from) ?? new Set();
  for (const target of targets) {
    const to = folderOf(target);
    if (!mayImport(from, to)) problems.push(`${file} imports ${target}: ${from} imports nothing of ${to}`);
    if (to !== from) edges.add(to);
  }
  folders.set(from, edges);
}
for (const cycle of cycles(folders)) problems.push(`folders import each other: ${cycle.join(', ')}`);

for (const file of sources('migrations')) {
  for (const target of importsOf(file)) {
    if (target.startsWith('src/') && !MIGRATIONS_MAY_IMPORT.some((prefix) => target.startsWith(prefix)))
      problems.push(`${file} imports ${target}: a migration imports no feature module`);
  }
}

for (const problem of problems) process.stderr.write(`${problem}\n`);
process.exit(problems.length === 0 ? 0 : 1);
