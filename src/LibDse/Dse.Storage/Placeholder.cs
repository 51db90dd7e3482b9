namespace Dse.Storage;
