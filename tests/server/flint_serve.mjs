// Shared by the npm-client tests (tests/server/node, codex, agents): a real `flint serve` on a free port,
// and scripted models (`flint mkmodel --script`) for answers known in advance.
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';

// Starts `flint serve --port 0 …args`; resolves when it prints the port it listens on.
export async function startServe(binary, args) {
  const server = spawn(binary, ['serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    server.on('exit', (code) => reject(new Error(`flint serve exited with ${code}`)));
    server.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
  });
  const stop = async () => {
    if (server.exitCode !== null) return;
    server.kill('SIGTERM');
    await once(server, 'exit');
  };
  return { port, stop };
}

// A model that answers `script`, or `then` once the one-token `marker` is in its context.
export function writeScriptedModel(binary, path, { script, then, marker }) {
  const args = ['mkmodel', '--script', script, '-o', path];
  if (then) args.push('--then', then, '--marker', marker);
  execFileSync(binary, args, { stdio: ['ignore', 'ignore', 'inherit'] });
}
