"""The canonical novel-project file tree (seed 000 §9.1, facts §2): exporter and importer."""
