"""The extensions shipped with caddie, one package each, written only against caddie.extensions.api."""
