/** Waits for a server process started by a bench to say where it listens; rejects with its output if it exits first. */
export function listeningUrl(child) {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/[^\s;]+)/.exec(output);
      if (match) resolve(match[1]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${output}`)));
  });
}
