#!/usr/bin/env node
// Load a session JSONL file with the real pi coding agent (@mariozechner/pi-coding-agent)
// exactly the way `pi --session FILE` / `/resume` opens it, and print what pi sees.
//
// Usage: node tests/pi_harness/load_session.mjs FILE
//
// pi may REWRITE the file while opening it (v1/v2 -> v3 migration, or wiping it to a bare
// header when the first parsed line is not a session header), so callers must pass a copy.
// The harness reports that via fileSha256Before/fileSha256After/rewritten.
//
// Prints exactly one JSON object on stdout:
//   {"ok": true, "version", "header", "entryCount", "entryIds", "leafId", "messages",
//    "llmMessages", "thinkingLevel", "model", "treeRoots" (null when "treeLoops": pi's getTree would never return),
//    "treeLoops", "fileSha256Before", "fileSha256After", "rewritten", "fileAfter"}
// or {"ok": false, "error": "..."} with exit code 1.
//
// Runs offline: no network, no API key. HOME and PI_CODING_AGENT_DIR point at a throwaway
// temp dir so the user's real ~/.pi is never read or written.

import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PKG = "@mariozechner/pi-coding-agent";

// Keep stdout clean for the single JSON result: anything the package logs goes to stderr.
const realStdoutWrite = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

function emit(obj, code) {
	realStdoutWrite(`${JSON.stringify(obj)}\n`, () => process.exit(code));
}

function sha256(path) {
	if (!existsSync(path)) return null;
	return createHash("sha256").update(readFileSync(path)).digest("hex");
}

// Same walk as pi's buildSessionContext (byId is last-entry-wins, parentId followed while truthy),
// but with a visited set: pi itself has none and loops forever on a parentId cycle.
function findParentCycle(entries, leafId) {
	const byId = new Map();
	for (const e of entries) byId.set(e.id, e);
	let current = leafId ? byId.get(leafId) : entries[entries.length - 1];
	const seen = new Set();
	while (current) {
		if (seen.has(current)) return current.id;
		seen.add(current);
		current = current.parentId ? byId.get(current.parentId) : undefined;
	}
	return null;
}

// Whether pi's getTree would never return: it builds one node per id (the last entry of an id wins) and hangs every
// entry under its parent's node, so an id written on two entries, one of them below the other, makes a loop its walk
// over the children follows forever (a loop the roots do not reach is never walked). pi calls getTree for its /tree
// view, not on resume; the harness reports the tree's roots unless they loop.
function treeLoops(entries) {
	const nodeMap = new Map();
	for (const e of entries) nodeMap.set(e.id, { children: [] });
	const roots = [];
	for (const e of entries) {
		const node = nodeMap.get(e.id);
		if (e.parentId === null || e.parentId === e.id) roots.push(node);
		else {
			const parent = nodeMap.get(e.parentId);
			if (parent) parent.children.push(node);
			else roots.push(node);
		}
	}
	const state = new Map(); // node -> 1 on the walk's path, 2 done
	for (const root of roots) {
		if (state.get(root) === 2) continue;
		const stack = [[root, 0]];
		state.set(root, 1);
		while (stack.length > 0) {
			const top = stack[stack.length - 1];
			const [node, i] = top;
			if (i < node.children.length) {
				top[1] = i + 1;
				const child = node.children[i];
				const s = state.get(child);
				if (s === 1) return true;
				if (s === undefined) {
					state.set(child, 1);
					stack.push([child, 0]);
				}
			} else {
				state.set(node, 2);
				stack.pop();
			}
		}
	}
	return false;
}

const tempHome = mkdtempSync(join(tmpdir(), "pi-harness-home-"));

async function main() {
	const file = process.argv[2];
	if (!file) throw new Error("usage: node load_session.mjs FILE");
	const path = resolve(file);
	if (!existsSync(path)) throw new Error(`no such file: ${path}`);

	// Isolate pi from the real user environment before the package is imported.
	process.env.HOME = tempHome;
	process.env.USERPROFILE = tempHome;
	process.env.PI_CODING_AGENT_DIR = join(tempHome, ".pi", "agent");

	// The package index re-exports SessionManager/convertToLlm from these two modules. Importing
	// them directly is the same code but skips loading every LLM provider SDK (~1.4 s -> ~0.05 s).
	// PI_HARNESS_FULL_IMPORT=1 goes through the public entry point instead.
	const indexUrl = import.meta.resolve(PKG);
	const distDir = dirname(fileURLToPath(indexUrl));
	const smPath = join(distDir, "core", "session-manager.js");
	const msgPath = join(distDir, "core", "messages.js");
	let SessionManager;
	let convertToLlm;
	if (process.env.PI_HARNESS_FULL_IMPORT !== "1" && existsSync(smPath) && existsSync(msgPath)) {
		({ SessionManager } = await import(pathToFileURL(smPath).href));
		({ convertToLlm } = await import(pathToFileURL(msgPath).href));
	} else {
		({ SessionManager, convertToLlm } = await import(PKG));
	}
	const version = JSON.parse(readFileSync(join(distDir, "..", "package.json"), "utf8")).version;

	const before = sha256(path);
	// What `pi --session FILE` does (main.js createSessionManager): SessionManager.open(path, sessionDir)
	// with sessionDir undefined -> derived from the file's parent directory.
	const sm = SessionManager.open(path);
	const entries = sm.getEntries();
	const leafId = sm.getLeafId();

	const cycleAt = findParentCycle(entries, leafId);
	if (cycleAt !== null) {
		const after = sha256(path);
		return {
			ok: false,
			hang: true,
			error: `parentId cycle at entry ${JSON.stringify(cycleAt)}: pi's buildSessionContext would loop forever`,
			version,
			fileSha256Before: before,
			fileSha256After: after,
			rewritten: before !== after,
		};
	}

	// The SessionManager method pi calls on resume (agent-session.js): wraps
	// buildSessionContext(getEntries(), leafId, byId).
	const ctx = sm.buildSessionContext();
	const llm = convertToLlm(ctx.messages);
	const loops = treeLoops(entries);
	const after = sha256(path);
	return {
		ok: true,
		version,
		header: sm.getHeader(),
		sessionId: sm.getSessionId(),
		entryCount: entries.length,
		entryIds: entries.map((e) => e.id),
		leafId,
		thinkingLevel: ctx.thinkingLevel,
		model: ctx.model,
		messages: ctx.messages,
		// What the LLM would receive (compactionSummary/branchSummary/custom -> user, etc.).
		llmMessages: llm,
		// What a request carries (pi-ai's transformMessages, which every provider runs first: errored and aborted
		// turns skipped, "No result provided" for a call left without a result), for the session's own model
		sentMessages: await sent(llm, ctx.model),
		treeRoots: loops ? null : sm.getTree().map((n) => n.entry.id),
		treeLoops: loops,
		fileSha256Before: before,
		fileSha256After: after,
		rewritten: before !== after,
		fileAfter: before !== after && existsSync(path) ? readFileSync(path, "utf8") : null,
	};
}

// pi-ai's transformMessages (the package pi-coding-agent depends on), or null where it is not at that path.
async function sent(llm, model) {
	let transform;
	try {
		const aiDir = dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-ai")));
		const p = join(aiDir, "providers", "transform-messages.js");
		if (!existsSync(p)) return null;
		({ transformMessages: transform } = await import(pathToFileURL(p).href));
	} catch {
		return null;
	}
	const m = { provider: model?.provider ?? "anthropic", api: "anthropic-messages", id: model?.modelId ?? "",
		input: ["text", "image"] };
	return transform(llm, m);
}

let result;
let code = 0;
try {
	result = await main();
	if (!result.ok) code = 1;
} catch (err) {
	result = { ok: false, error: err && err.stack ? String(err.stack) : String(err) };
	code = 1;
} finally {
	try {
		rmSync(tempHome, { recursive: true, force: true });
	} catch {
		// ignore
	}
}
emit(result, code);
