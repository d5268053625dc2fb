// Test harness: what the real pi agent reads from a settings.json, and whether pi's own lock
// (proper-lockfile, as pi's FileSettingsStorage takes it) can be taken on it right now.
// Usage: node read_settings.mjs <agentDir> <cwd>   -> one JSON line on stdout
import { SettingsManager } from "@mariozechner/pi-coding-agent";
import lockfile from "proper-lockfile";
import { join } from "node:path";

const [agentDir, cwd] = process.argv.slice(2);
const settings = SettingsManager.create(cwd, agentDir);
let lock = "free";
try {
  const release = lockfile.lockSync(join(agentDir, "settings.json"), { realpath: false });
  release();
} catch (e) {
  lock = e.code || String(e);
}
console.log(JSON.stringify({ compaction: settings.getCompactionSettings(), lock }));
