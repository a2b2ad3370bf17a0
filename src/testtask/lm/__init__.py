"""Language-model machinery the papers share; a paper package imports from here, never from another paper."""
