#!/usr/bin/env node
// OpenClaw's own bootstrap-file budget (buildBootstrapContextFiles from the `openclaw` npm package):
// the per-file trim (trimBootstrapContent, AGENTS.md policy digest included) and the total budget.
//
// Usage: node tests/openclaw_harness/trim_bootstrap.mjs < request.json
//   request: {"cases": [{"files": [{"name", "path", "content"} | {"name", "path", "missing": true}],
//                        "maxChars": N, "totalMaxChars": N}, ...]}
// Prints one JSON object: {"ok": true, "version", "module", "results": [[{"path", "content"}, ...], ...]}
// or {"ok": false, "error"} with exit code 1. Strings cross as JSON, so lone surrogates survive.
//
// The function is not exported from the package entry point: the dist chunk that defines it is
// found by its source text and its minified export name read from the chunk's export clause.

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const realStdoutWrite = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);
console.warn = (...args) => console.error(...args);

function emit(obj, code) {
	realStdoutWrite(`${JSON.stringify(obj)}\n`, () => process.exit(code));
}

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, "node_modules", "openclaw");
const FN = "buildBootstrapContextFiles";

async function load() {
	const dist = join(pkgDir, "dist");
	const names = readdirSync(dist).filter((f) => f.endsWith(".mjs"));
	// The chunk is named after its module (bootstrap-<hash>.mjs); look there first, then everywhere.
	const ordered = [...names.filter((f) => /^bootstrap-[^.]+\.mjs$/.test(f)), ...names];
	for (const f of ordered) {
		const src = readFileSync(join(dist, f), "utf8");
		if (!src.includes(`function ${FN}(`)) continue;
		const clause = /export\s*\{([^}]*)\}\s*;?\s*$/.exec(src.trimEnd());
		if (!clause) continue;
		for (const part of clause[1].split(",")) {
			const [local, exported] = part.trim().split(/\s+as\s+/);
			if (local === FN) {
				const mod = await import(pathToFileURL(join(dist, f)).href);
				return { fn: mod[exported ?? local], module: f };
			}
		}
	}
	throw new Error(`${FN} not found in ${dist}`);
}

async function main() {
	const req = JSON.parse(readFileSync(0, "utf8"));
	const { fn, module } = await load();
	const version = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;
	const results = req.cases.map((c) =>
		fn(c.files, { maxChars: c.maxChars, totalMaxChars: c.totalMaxChars, warn: () => {} }).map((r) => ({
			path: r.path,
			content: r.content,
		})),
	);
	return { ok: true, version, module, results };
}

try {
	emit(await main(), 0);
} catch (err) {
	emit({ ok: false, error: err && err.stack ? String(err.stack) : String(err) }, 1);
}
