// Lets Pi's RpcClient (which runs `node <cliPath> --mode rpc ...`) start caddie instead of Pi.
// CADDIE_PYTHON names the Python interpreter; arguments, stdio and the exit status pass through.
import { spawn } from "node:child_process";

const child = spawn(process.env.CADDIE_PYTHON || "python3", ["-m", "caddie", ...process.argv.slice(2)], {
  stdio: "inherit",
});
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
