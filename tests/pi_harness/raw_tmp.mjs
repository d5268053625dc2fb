import { SessionManager } from "@mariozechner/pi-coding-agent";
const sm = SessionManager.open(process.argv[2]);
console.error("opened", sm.getEntries().length);
const c = sm.buildSessionContext();
console.log(c.messages.length);
