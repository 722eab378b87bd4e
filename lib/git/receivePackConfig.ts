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
    // The connectivity check (`rev-list --alternate-refs`) lists the refs of every borrowed object
    // store that belongs to a repository. While receive-pack quarantines a push, the one such store
    // is the private repository's own, whose refs are `--all` already: listing them again costs a
    // git for-each-ref per push, on the path of `ok`, and a pass over every ref of the repository.
    // A scratch repository's layout keeps git from running it for that store (scratchRepo.ts,
    // OBJECTS_DIR); should some other store qualify, `true` lists none, which changes no walk
    // (connected.c, transport.c refs_from_alternate_cb).
    ...['-c', 'core.alternateRefsCommand=true'],
    // The private repository is thrown away after the push; gc there is wasted work.
    ...['-c', 'receive.autogc=false'],
    ...['-c', 'gc.auto=0'],
  ];
}
