/** Git configuration for receive-pack; each line says why. */
export function receivePackConfig(hooksDir: string): string[] {
  return [
    // Every ref command goes to the proc-receive hook: narwal, not receive-pack, updates refs.
    ...['-c', 'receive.procReceiveRefs=refs'],
    ...['-c', `core.hooksPath=${hooksDir}`],
    // Keep every pushed pack as a pack (never explode it into loose objects) so it can be stored as is.
    ...['-c', 'receive.unpackLimit=1'],
    ...['-c', 'receive.fsckObjects=true'],
    ...['-c', 'receive.advertisePushOptions=true'],
    // The private repository is thrown away after the push; gc there is wasted work.
    ...['-c', 'receive.autogc=false'],
    ...['-c', 'gc.auto=0'],
  ];
}
