namespace Dse;
