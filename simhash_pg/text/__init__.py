"""From text to fingerprint: everything that reads a document's characters.

- :mod:`.normalize`: the numbered normalisation rules;
- :mod:`.charclass`: the one definition of "letters, digits and marks";
- :mod:`.schemes`: frozen, versioned fingerprint schemes;
- :mod:`.features`: one feature extractor per scheme, in a registry;
- :mod:`.simhash`: the vote, :class:`~.simhash.Fingerprinter` and ``fingerprint()``;
- :mod:`.workers`: the process pool behind ``fingerprint_many``;
- :mod:`.signatures`: the exact n-longest-sentences signature.

Nothing here touches the database.
"""
