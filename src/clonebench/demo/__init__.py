"""The offline demo: an eSpeak NG dataset shaped like LibriTTS, served by the stand-in."""
