package nodeclient

// InstallIn is install(dir), which Install runs once per process.
var InstallIn = install
